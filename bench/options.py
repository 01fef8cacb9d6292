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

# What results.json records of the options: those that shape the figures.
RECORDED = (
    "history",
    "concurrency",
    "systems",
    "baseline",
    "rounds",
    "cycles",
    "min_cycles",
    "seconds",
    "warmup",
    "count_cycles",
    "sqlite_synchronous",
    "gc_freeze",
    "http",
    "http_clients",
    "http_resumes",
    "http_seconds",
)

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
    matrix = parser.add_argument_group(
        "the matrix: symfonic, LangGraph and the floor, one child process per configuration"
    )
    matrix.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="sqlite|postgresql://…",
        help="repeatable; none: sqlite, plus PostgreSQL at $BENCH_POSTGRES_URL (else "
        f"$SYMFONIC_TEST_POSTGRES_URL, else {DEFAULT_POSTGRES_URL}) when it answers. "
        "The HTTP step uses the same stores",
    )
    lists = {"type": _int_list, "metavar": "N,N,…"}
    matrix.add_argument(
        "--history", default="0,100,1000,10000", help="messages of history a session holds", **lists
    )
    matrix.add_argument(
        "--concurrency", default="1,16", help="sessions cycling at once in one process", **lists
    )
    matrix.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        metavar="NAME,…",
        help=f"systems to measure; also {','.join(OPTIONAL_SYSTEMS)} (symfonic on SQLite "
        "with ?synchronous=normal)",
    )
    matrix.add_argument(
        "--baseline",
        type=_source_tree,
        metavar="SRC",
        help=f"also measure the symfonic in SRC (the src/ folder of another checkout) as "
        f"the system {BASELINE}, interleaved with the others; the report compares the two "
        "row by row",
    )
    matrix.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="times the whole matrix runs, systems rotated each round; each figure is "
        "the median round's",
    )
    timing = parser.add_argument_group("timing of each configuration")
    timing.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="time box of the timed section; cycles already started finish",
    )
    timing.add_argument("--cycles", type=int, default=2000, help="cap on timed cycles")
    timing.add_argument(
        "--min-cycles",
        type=int,
        default=5,
        help="the time box never stops the timed section before this many cycles",
    )
    timing.add_argument("--warmup", type=int, default=1, help="untimed warm-up cycles per slot")
    timing.add_argument(
        "--count-cycles", type=int, default=4, help="cycles of the separate row-counting pass"
    )
    timing.add_argument(
        "--sqlite-synchronous",
        default="FULL",
        help="PRAGMA synchronous for the LangGraph saver and the floor; symfonic's own is "
        "FULL (symfonic+normal: NORMAL)",
    )
    timing.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="skip gc.freeze() after the warm-up (a long-running worker's usual step)",
    )
    timing.add_argument(
        "--timeout", type=float, default=900, help="seconds before a configuration is stopped"
    )
    http = parser.add_argument_group(
        "the HTTP step: POST /v1/resume against a real `symfonic serve` on loopback, "
        "after the matrix"
    )
    http.add_argument(
        "--http", action=argparse.BooleanOptionalAction, default=True, help="run the HTTP step"
    )
    http.add_argument(
        "--http-clients", default="1,16,64", help="concurrent clients, one level each", **lists
    )
    http.add_argument(
        "--http-resumes",
        type=int,
        default=300,
        metavar="N",
        help="resumes per level, at least one per client",
    )
    http.add_argument(
        "--http-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="per level, the most seconds spent creating its pauses and again resuming "
        "them; the whole step is stopped past a bound derived from it",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results",
        help="results.json and work/ (each child's config, result, log) go here",
    )
    output.add_argument(
        "--report",
        type=Path,
        default=ROOT / "docs" / "benchmarks.md",
        help="the Markdown report",
    )
    output.add_argument("--no-report", action="store_true", help="measure, write no report")
    output.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild the report from OUT/results.json, measure nothing",
    )
    output.add_argument(
        "--keep-stores",
        action="store_true",
        help="keep each configuration's SQLite file / PostgreSQL database",
    )
    return parser


def recorded_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options that shape the figures, as results.json records them."""
    recorded = {key: getattr(args, key) for key in RECORDED}
    if recorded["baseline"] is not None:
        recorded["baseline"] = str(recorded["baseline"])
    return recorded
