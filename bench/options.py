"""The options of ``python -m bench``, and the ones results.json records.

The parser lives apart from the run it configures, so the orchestration in
:mod:`bench.run` reads as the phases of a run and not as a list of flags.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.matrix import ROOT
from bench.stores import DEFAULT_POSTGRES_URL
from bench.workloads import BASELINE, OPTIONAL_SYSTEMS, SYSTEMS

# The options that say only where output goes and how long to wait; results.json
# records all the others, the ones that shape the figures.
UNRECORDED = ("store", "timeout", "out", "report", "no_report", "report_only", "keep_stores")

EPILOG = """\
examples:
  python -m bench                                  the full run (30-50 min on 2 cores)
  python -m bench --history 0 --concurrency 1 --seconds 1 --rounds 1 --http-resumes 20 \\
      --out /tmp/b --report /tmp/b/benchmarks.md  a smoke run (~30 s)
  python -m bench --report-only                    redraw docs/benchmarks.md from results.json
  git worktree add /tmp/before COMMIT && python -m bench --systems symfonic \\
      --baseline /tmp/before/src --no-http        this tree against COMMIT, in one sitting

Every figure and how it is measured: bench/README.md.
"""

# The timing of each configuration: flag, type, default, help.
TIMING = (
    ("--seconds", float, 3.0, "time box of the timed section; cycles already started finish"),
    ("--cycles", int, 2000, "cap on timed cycles"),
    ("--min-cycles", int, 5, "the time box never stops the timed section before these cycles"),
    ("--warmup", int, 1, "untimed warm-up cycles per slot"),
    ("--count-cycles", int, 4, "cycles of the separate row-counting pass"),
    ("--sqlite-synchronous", str, "FULL", "PRAGMA synchronous of LangGraph's saver and the floor"),
    ("--timeout", float, 900.0, "seconds before a configuration is stopped"),
)


class _Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The epilog as written, and each option's default after its help."""


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _source_tree(text: str) -> Path:
    tree = Path(text).expanduser().resolve()
    if not (tree / "symfonic" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(
            f"{text} holds no symfonic package: give the src/ folder of a symfonic checkout"
        )
    return tree


def parser(description: str | None) -> argparse.ArgumentParser:
    """The command line of ``python -m bench``; ``description`` heads its help."""
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=description, epilog=EPILOG, formatter_class=_Help
    )
    lists = {"type": _int_list, "metavar": "N,N,…"}
    matrix = parser.add_argument_group("the matrix: one child process per configuration")
    matrix.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="sqlite|postgresql://…",
        help="repeatable; none: sqlite, plus PostgreSQL at $BENCH_POSTGRES_URL (else "
        f"$SYMFONIC_TEST_POSTGRES_URL, else {DEFAULT_POSTGRES_URL}) when it answers. "
        "The HTTP step uses the same stores",
    )
    matrix.add_argument(
        "--history", default="0,100,1000,10000", help="messages of history", **lists
    )
    matrix.add_argument("--concurrency", default="1,16", help="sessions cycling at once", **lists)
    matrix.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"systems to measure; also {','.join(OPTIONAL_SYSTEMS)} (SQLite, ?synchronous=normal)",
    )
    matrix.add_argument(
        "--baseline",
        type=_source_tree,
        metavar="SRC",
        help=f"also measure the symfonic in SRC (the src/ folder of another checkout) as "
        f"{BASELINE}, interleaved with the others; the report compares the two row by row",
    )
    matrix.add_argument(
        "--rounds", type=int, default=3, help="times the matrix runs, its systems rotated"
    )
    timing = parser.add_argument_group("timing of each configuration")
    for flag, kind, default, text in TIMING:
        timing.add_argument(flag, type=kind, default=default, help=text)
    timing.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="skip gc.freeze() after the warm-up (a long-running worker's usual step)",
    )
    http = parser.add_argument_group("the HTTP step: POST /v1/resume against `symfonic serve`")
    http.add_argument("--http", action=argparse.BooleanOptionalAction, default=True, help="run it")
    http.add_argument("--http-clients", default="1,16,64", help="clients, one level each", **lists)
    http.add_argument("--http-resumes", type=int, default=300, help="resumes per level")
    http.add_argument(
        "--http-seconds",
        type=float,
        default=10.0,
        help="per level, the most seconds spent creating its pauses, and again resuming them",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results", help="results.json and work/"
    )
    output.add_argument("--report", type=Path, default=ROOT / "docs" / "benchmarks.md")
    output.add_argument("--no-report", action="store_true", help="measure, write no report")
    output.add_argument("--report-only", action="store_true", help="redraw the report only")
    output.add_argument("--keep-stores", action="store_true", help="keep each store after")
    return parser


def recorded_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options that shape the figures, as results.json records them."""
    recorded = {k: v for k, v in vars(args).items() if k not in UNRECORDED}
    if recorded["baseline"] is not None:
        recorded["baseline"] = str(recorded["baseline"])
    return recorded
