"""The one command: ``python -m bench``.

Runs, in one run and one process tree, the whole matrix (symfonic, LangGraph and
the floor, one child process per configuration), then the HTTP step (resumes
against a real ``symfonic serve``); writes ``results.json`` after every
configuration (a crash keeps what was measured), then the Markdown report.
``--report-only`` rebuilds the report from an existing
``results.json`` without measuring anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.config import ChildConfig
from bench.http_step import HttpOptions, run_http_step
from bench.machine import describe
from bench.matrix import (
    BUSY_THRESHOLD,
    ROOT,
    Store,
    configurations,
    exit_on_sigterm,
    median_rounds,
    run_configuration,
)
from bench.options import parser, recorded_options
from bench.stores import DEFAULT_POSTGRES_URL, reachable, server_version
from bench.workloads import BASELINE, unavailable_reason


def _stores(requested: list[str]) -> tuple[list[Store], list[str]]:
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
        problem = reachable(item)
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
    timing = ("cycles", "min_cycles", "seconds", "warmup", "count_cycles", "sqlite_synchronous")
    shared = {key: getattr(args, key) for key in (*timing, "gc_freeze")}
    return ChildConfig(system="", store="sqlite", location="", history=0, concurrency=1, **shared)


def _new_document(
    args: argparse.Namespace, stores: list[Store], notes: list[str], unavailable: dict[str, str]
) -> dict[str, Any]:
    pg_version = None
    if any(store.kind == "postgresql" for store in stores):
        pg_version = server_version(next(s.url for s in stores if s.kind == "postgresql"))
    meta = describe(ROOT, pg_version) | {
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "busy_threshold": BUSY_THRESHOLD,
        "options": recorded_options(args),
        "notes": notes,
        "unavailable": unavailable,
    }
    return {"meta": meta, "results": []}


def measure(args: argparse.Namespace, results_path: Path) -> dict[str, Any]:
    """Run every configuration, one at a time, then the HTTP step; save results.json
    after each."""
    stores, notes = _stores(args.store)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if BASELINE in systems and not args.baseline:
        raise SystemExit(f"{BASELINE} needs --baseline SRC, the source tree it stands for")
    sources = {BASELINE: str(args.baseline)} if args.baseline else {}
    if args.baseline and BASELINE not in systems:
        systems.append(BASELINE)
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
            sources=sources,
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
        _say(
            f"[http] POST /v1/resume at {args.http_clients} clients (bound "
            f"{options.bound(len(stores)):.0f} s) …"
        )
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


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    args = parser(__doc__).parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.json"
    if args.report_only:
        document = json.loads(results_path.read_text())
    else:
        document = measure(args, results_path)
        _say(f"results: {results_path}")
    if not args.no_report:
        from bench.report import write_report

        written = write_report(document, args.report, args.out / "runs.json")
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
