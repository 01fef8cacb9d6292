"""The one command: ``python -m bench`` (or ``python bench/run.py``).

Runs, in one run and one process tree, the whole matrix (symfonic, LangGraph and
the floor, one child process per configuration), then the HTTP step (resumes
against a real ``symfonic serve``); writes ``results.json`` after every
configuration (a crash keeps what was measured), then the Markdown report and
its plots. ``--report-only`` rebuilds the report from an existing
``results.json`` without measuring anything.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/run.py`: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.config import ChildConfig
from bench.http_step import HttpOptions, run_http_step
from bench.machine import describe
from bench.matrix import (
    BUSY_THRESHOLD,
    ROOT,
    Store,
    configurations,
    median_rounds,
    run_configuration,
)
from bench.workloads import SYSTEMS, unavailable_reason

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


EPILOG = """\
examples:
  python -m bench                                  the full run (25-45 min on 2 cores)
  python -m bench --history 0 --concurrency 1 --seconds 1 --rounds 1 --http-resumes 20 \\
      --out /tmp/b --report /tmp/b/benchmarks.md  a smoke run (~30 s)
  python -m bench --report-only                    redraw docs/benchmarks.md from results.json

Every figure and how it is measured: bench/README.md.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    matrix = parser.add_argument_group(
        "the matrix: symfonic, LangGraph and the floor, one child process per configuration"
    )
    matrix.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="sqlite|postgresql://…",
        help="repeatable; default: sqlite, plus PostgreSQL at $BENCH_POSTGRES_URL (else "
        f"$SYMFONIC_TEST_POSTGRES_URL, else {DEFAULT_POSTGRES_URL}) when it answers. "
        "The HTTP step uses the same stores",
    )
    matrix.add_argument(
        "--history",
        type=_int_list,
        default=[0, 100, 1000, 10000],
        metavar="N,N,…",
        help="messages of history each session holds (default: 0,100,1000,10000)",
    )
    matrix.add_argument(
        "--concurrency",
        type=_int_list,
        default=[1, 16],
        metavar="N,N,…",
        help="sessions cycling at once in one process (default: 1,16)",
    )
    matrix.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        metavar="NAME,…",
        help=f"systems to measure (default: {','.join(SYSTEMS)})",
    )
    matrix.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="times the whole matrix runs, systems rotated each round; each figure is "
        "the median round's (default: 3)",
    )
    timing = parser.add_argument_group("timing of each configuration")
    timing.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="time box of the timed section; cycles already started finish (default: 3)",
    )
    timing.add_argument(
        "--cycles",
        type=int,
        default=2000,
        help="cap on timed cycles, all slots together (default: 2000)",
    )
    timing.add_argument(
        "--min-cycles",
        type=int,
        default=5,
        help="the time box never stops the timed section before this many cycles (default: 5)",
    )
    timing.add_argument(
        "--warmup", type=int, default=1, help="untimed warm-up cycles per slot (default: 1)"
    )
    timing.add_argument(
        "--count-cycles",
        type=int,
        default=4,
        help="cycles of the separate row-counting pass (default: 4)",
    )
    timing.add_argument(
        "--sqlite-synchronous",
        default="NORMAL",
        help="PRAGMA synchronous for the LangGraph saver and the floor; symfonic's own is "
        "NORMAL; '' keeps each default (default: NORMAL)",
    )
    timing.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="skip gc.freeze() after the warm-up (a long-running worker's usual step)",
    )
    timing.add_argument(
        "--timeout",
        type=float,
        default=900,
        help="seconds before a configuration's child is stopped (default: 900)",
    )
    http = parser.add_argument_group(
        "the HTTP step: POST /v1/resume against a real `symfonic serve` on loopback, "
        "after the matrix"
    )
    http.add_argument(
        "--http",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the HTTP step (default: on)",
    )
    http.add_argument(
        "--http-clients",
        type=_int_list,
        default=[1, 16, 64],
        metavar="N,N,…",
        help="concurrent clients, one level each (default: 1,16,64)",
    )
    http.add_argument(
        "--http-resumes",
        type=int,
        default=300,
        metavar="N",
        help="resumes per level, at least one per client (default: 300)",
    )
    http.add_argument(
        "--http-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="per level, the most seconds spent creating its pauses and again resuming "
        "them; the whole step is stopped past a bound derived from it (default: 10)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results",
        help="results.json and work/ (each child's config, result, log) go here "
        "(default: bench/results)",
    )
    output.add_argument(
        "--report",
        type=Path,
        default=ROOT / "docs" / "benchmarks.md",
        help="the Markdown report; its plots go beside it as bench_*.png "
        "(default: docs/benchmarks.md)",
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


def _stores(requested: list[str]) -> tuple[list[Store], list[str]]:
    from bench.probes import pg_admin

    notes: list[str] = []
    if requested:
        wanted = requested
    else:
        url = os.environ.get("BENCH_POSTGRES_URL") or os.environ.get(
            "SYMFONIC_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL
        )
        wanted = ["sqlite", url]
    stores: list[Store] = []
    for item in wanted:
        if item == "sqlite":
            stores.append(Store("sqlite", "sqlite"))
            continue
        problem = pg_admin.reachable(item)
        if problem is None:
            stores.append(Store("postgresql", item))
        elif requested:
            raise SystemExit(f"PostgreSQL at {item} does not answer: {problem}")
        else:
            notes.append(f"PostgreSQL skipped: {problem}")
    return stores, notes


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _summary(result: dict[str, Any]) -> str:
    if result.get("status") != "ok":
        return f"{result.get('status')}: {result.get('error', '')}"
    kib = (result.get("bytes_per_cycle") or 0) / 1024
    return (
        f"{result['cycles_per_second']:.1f} cycles/s, pause p50 {result['pause_p50_ms']} ms, "
        f"{kib:.1f} KiB and {result['rows_per_cycle']} rows per cycle "
        f"({result['cycles']} cycles, {result.get('wall_seconds')} s)"
    )


def _template(args: argparse.Namespace) -> ChildConfig:
    """The options every configuration shares; the matrix fills in the rest."""
    return ChildConfig(
        system="",
        store="sqlite",
        location="",
        history=0,
        concurrency=1,
        cycles=args.cycles,
        min_cycles=args.min_cycles,
        seconds=args.seconds,
        warmup=args.warmup,
        count_cycles=args.count_cycles,
        sqlite_synchronous=args.sqlite_synchronous,
        gc_freeze=args.gc_freeze,
    )


def _new_document(
    args: argparse.Namespace, stores: list[Store], notes: list[str], unavailable: dict[str, str]
) -> dict[str, Any]:
    pg_version = None
    if any(store.kind == "postgresql" for store in stores):
        from bench.probes.pg_admin import server_version

        pg_version = server_version(next(s.url for s in stores if s.kind == "postgresql"))
    meta = describe(ROOT, pg_version) | {
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "busy_threshold": BUSY_THRESHOLD,
        "options": _options(args),
        "notes": notes,
        "unavailable": unavailable,
    }
    return {"meta": meta, "results": []}


def measure(args: argparse.Namespace, results_path: Path) -> dict[str, Any]:
    """Run every configuration, one at a time, then the HTTP step; save results.json
    after each."""
    stores, notes = _stores(args.store)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unavailable = {s: r for s in systems if (r := unavailable_reason(s)) is not None}
    for system, reason in unavailable.items():
        _say(f"!! {system} is unavailable and will be reported as such: {reason}")
    document = _new_document(args, stores, notes, unavailable)
    rounds = max(1, args.rounds)
    plan = [
        (round_number, store, config)
        for round_number in range(1, rounds + 1)
        for store, config in configurations(
            _template(args),
            stores,
            args.history,
            args.concurrency,
            systems,
            rotation=round_number - 1,
        )
    ]
    workdir = args.out / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    measured: list[dict[str, Any]] = []
    for index, (round_number, store, config) in enumerate(plan, start=1):
        if config.system in unavailable:
            result: dict[str, Any] = {"status": "unavailable", "error": unavailable[config.system]}
        else:
            _say(f"[{index}/{len(plan)}] round {round_number}: {config.label} …")
            result = run_configuration(
                store, config, workdir, index, args.timeout, args.keep_stores
            )
            _say(f"    {_summary(result)}")
        key = {k: getattr(config, k) for k in ("system", "store", "history", "concurrency")}
        measured.append(key | result | {"round": round_number})
        document["results"] = median_rounds(measured)
        results_path.write_text(json.dumps(document, indent=1))
    if args.http:
        options = HttpOptions(args.http_clients, args.http_resumes, args.http_seconds)
        _say(f"[http] POST /v1/resume at {args.http_clients} clients (bound "
             f"{options.bound(len(stores)):.0f} s) …")
        document["http"] = run_http_step(stores, options, workdir)
        for row in document["http"]["results"]:
            _say(f"    {_http_summary(row)}")
    document["meta"]["total_seconds"] = round(time.monotonic() - began, 1)
    results_path.write_text(json.dumps(document, indent=1))
    return document


def _http_summary(row: dict[str, Any]) -> str:
    return (
        f"{row['store']}, {row['clients']} clients: {row['resumes_per_s']} resumes/s, "
        f"p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms ({row['resumes']} resumes)"
    )


def _options(args: argparse.Namespace) -> dict[str, Any]:
    keys = (
        "history",
        "concurrency",
        "systems",
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
    return {key: getattr(args, key) for key in keys}


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # SystemExit unwinds through the `finally` blocks that drop PostgreSQL databases
    # and stop the running child; SIGTERM's default would skip them.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = _parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.json"
    if args.report_only:
        document = json.loads(results_path.read_text())
    else:
        document = measure(args, results_path)
        _say(f"results: {results_path}")
    if not args.no_report:
        from bench.report import write_report

        written = write_report(document, args.report)
        _say("report: " + ", ".join(str(path) for path in written))
    for system, reason in document["meta"].get("unavailable", {}).items():
        _say(f"!! {system} was NOT measured (it does not import): {reason}")
    failed = [r for r in document["results"] if r.get("status") == "error"]
    for row in failed:
        _say(
            f"!! {row['system']}/{row['store']}/h{row['history']}/c{row['concurrency']} "
            f"failed: {row.get('error')}"
        )
    http = document.get("http", {})
    for problem in http.get("problems", []):
        _say(f"!! http: {problem}")
    return 1 if failed or http.get("status") == "error" else 0


if __name__ == "__main__":
    raise SystemExit(main())
