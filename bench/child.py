"""One configuration, in a process of its own: ``python -m bench.child CONFIG OUT``.

A process per configuration makes peak RSS a property of that configuration, and
keeps one system's caches, pools and garbage from slowing the next. The store's
schema is created before, by ``python -m bench.child CONFIG OUT --schema``, a
process of its own, as a serving worker finds its schema already migrated. The
phases are :meth:`_Run.prepare`, :meth:`_Run.timed` and :meth:`_Run.count_rows`
(``bench/README.md``, "Phases of one configuration"). The result (or the error)
is written as JSON to OUT, never to stdout, so library chatter on stdout cannot
corrupt it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import resource
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.config import ChildConfig
from bench.driver import (
    MESSAGES_PER_CYCLE,
    PassResult,
    SessionPool,
    cycles_per_session,
    run_cycles,
)
from bench.history import make_history
from bench.machine import rss_bytes
from bench.probes.base import StoreProbe
from bench.stats import latency_ms
from bench.workloads import workload_class
from bench.workloads.base import Workload, WorkloadSpec

# Sessions are seeded for this many times the cycles the warm-up's pace predicts;
# a slot that still runs out stops early, and the result says so.
SESSION_MARGIN = 5.0
# The pacing pass: at most this many cycles per slot, or this long.
PACE_CYCLES = 5
PACE_SECONDS = 0.5


def _probe(config: ChildConfig) -> StoreProbe:
    if config.store == "sqlite":
        from bench.probes.sqlite_probe import SqliteProbe

        return SqliteProbe(config.location)
    from bench.probes.pg_probe import PostgresProbe

    return PostgresProbe(config.location)


@dataclass
class _Run:
    """One configuration's live pieces, passed from phase to phase."""

    config: ChildConfig
    workload: Workload
    probe: StoreProbe
    pool: SessionPool
    count_pool: SessionPool
    notes: list[str] = field(default_factory=list)
    seeding_seconds: float = 0.0
    # CPU time of this process, all threads (SQLite's included), over the timed section.
    timed_cpu_seconds: float = 0.0

    async def seed(self, pool: SessionPool, uses_per_slot: int) -> None:
        began = time.perf_counter()
        pool.add(await self.workload.add_sessions(pool.sessions_to_add(uses_per_slot)))
        self.seeding_seconds += time.perf_counter() - began

    async def prepare(self) -> None:
        """Seed, warm up, pace, seed for the timed section, reset the store."""
        config, workload, pool = self.config, self.workload, self.pool
        await workload.setup()
        await self.seed(pool, config.warmup + PACE_CYCLES)
        # Cold warm-up (first calls, pools, caches), then a short pacing pass, so the
        # sessions seeded for the timed section fit the system's real speed.
        pace = await run_cycles(workload, pool, cycles_per_slot=config.warmup)
        if pace.seconds < config.seconds / 2:
            pace = await run_cycles(
                workload, pool, cycles_per_slot=PACE_CYCLES, seconds=PACE_SECONDS
            )
        # Otherwise a round is so slow that the timed section is a round or two: the
        # cold round's pace is close enough, and another would cost minutes.
        await self.seed(pool, _timed_cycles_per_slot(config, pace) + config.warmup)
        await self.seed(self.count_pool, config.count_cycles)
        if note := self.probe.reset():
            self.notes.append(note)
        if self.probe.rewarm_after_reset:
            # After the reset, so first-touch costs (PostgreSQL's full-page images)
            # are paid before the timed section, alike for every system.
            await run_cycles(workload, pool, cycles_per_slot=config.warmup)
        if config.gc_freeze:
            # What is alive now (modules, classes, schemas, pools, the seeded
            # sessions' handles) lives as long as the process. Left in the
            # collector's oldest generation, every full collection walks it again:
            # ~0.6 µs an object on this kind of machine, ~60 ms for a runtime's
            # ~100k, which is then charged to whichever cycle allocated last.
            gc.collect()
            gc.freeze()

    async def timed(self) -> tuple[PassResult, int]:
        """The timed section, with the bytes probe around it."""
        self.probe.begin_bytes()
        cpu = time.process_time()
        timed = await run_cycles(
            self.workload,
            self.pool,
            cycles_per_slot=self.config.cycles_per_slot,
            seconds=self.config.seconds,
            min_cycles=self.config.min_cycles,
        )
        self.timed_cpu_seconds = time.process_time() - cpu
        written = self.probe.end_bytes()
        self.notes += self.probe.interference()
        if "sessions" in timed.stopped_by:
            self.notes.append(
                "session pool ran out before the time box; the timed section was shorter"
            )
        return timed, written

    async def count_rows(self) -> tuple[PassResult, int]:
        """The counting pass: store closed at both ends, so the row probe can settle."""
        self.probe.begin_rows()
        await self.workload.open()
        try:
            counted = await run_cycles(
                self.workload,
                self.count_pool,
                cycles_per_slot=self.config.count_cycles,
                seconds=self.config.seconds,
            )
        finally:
            await self.workload.close()
        return counted, self.probe.end_rows()


async def _measure(config: ChildConfig, workload: Workload, probe: StoreProbe) -> dict[str, Any]:
    limit = cycles_per_session(config.history)
    run = _Run(
        config, workload, probe, SessionPool(config.concurrency, limit), SessionPool(1, limit)
    )
    await workload.open()
    try:
        await run.prepare()
        timed, written = await run.timed()
    finally:
        await workload.close()
    counted, rows = await run.count_rows()
    cpu_ms = 1000 * run.timed_cpu_seconds / timed.cycles if timed.cycles else None
    return _figures(timed, counted, written, rows) | {
        "cpu_ms_per_cycle": None if cpu_ms is None else round(cpu_ms, 3),
        "seeding_seconds": round(run.seeding_seconds, 3),
        "sessions": run.pool.size + run.count_pool.size,
        "cycles_per_session_limit": limit,
        "cycles_per_session_max": run.pool.max_uses,
        "history_at_end_max": config.history + MESSAGES_PER_CYCLE * run.pool.max_uses,
        "stopped_by": sorted(timed.stopped_by),
        "bytes_details": probe.details(),
        "bytes_method": probe.bytes_method,
        "rows_method": probe.rows_method,
        "notes": run.notes,
    }


def _timed_cycles_per_slot(config: ChildConfig, pace: PassResult) -> int:
    """Cycles each slot can run in the time box, from the warm-up's pace, with a margin."""
    if pace.cycles == 0 or pace.seconds <= 0:
        return config.cycles_per_slot
    seconds_per_cycle = pace.seconds * config.concurrency / pace.cycles  # per slot
    expected = math.ceil(SESSION_MARGIN * config.seconds / seconds_per_cycle)
    floor = math.ceil(config.min_cycles / config.concurrency)
    return min(config.cycles_per_slot, max(expected, floor))


def _figures(timed: PassResult, counted: PassResult, written: int, rows: int) -> dict[str, Any]:
    pause, resume = latency_ms(timed.pause_seconds), latency_ms(timed.resume_seconds)
    return {
        "cycles": timed.cycles,
        "seconds": round(timed.seconds, 4),
        "cycles_per_second": round(timed.cycles_per_second, 2),
        "pause_p50_ms": pause["p50_ms"],
        "pause_p99_ms": pause["p99_ms"],
        "resume_p50_ms": resume["p50_ms"],
        "resume_p99_ms": resume["p99_ms"],
        "bytes_written": written,
        "bytes_per_cycle": round(written / timed.cycles) if timed.cycles else None,
        "count_cycles": counted.cycles,
        "rows_written": rows,
        "rows_per_cycle": round(rows / counted.cycles, 2) if counted.cycles else None,
    }


def run(config: ChildConfig) -> dict[str, Any]:
    workload = _workload(config)
    probe = _probe(config)
    baseline = rss_bytes()
    try:
        probe.prepare_store()
        figures = asyncio.run(_measure(config, workload, probe))
    finally:
        probe.close()
    # ru_maxrss is in KiB on Linux: the high-water mark of this process alone.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return figures | {
        "status": "ok",
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": baseline,
        "settings": workload.settings(),
    }


async def create_schema(workload: Workload) -> dict[str, Any]:
    await workload.open()
    try:
        await workload.setup()
    finally:
        await workload.close()
    return {"status": "ok"}


def _workload(config: ChildConfig) -> Workload:
    spec = WorkloadSpec(
        store=config.store,
        location=config.location,
        concurrency=config.concurrency,
        history=make_history(config.history),
        sqlite_synchronous=config.sqlite_synchronous,
    )
    return workload_class(config.system, config.store)(spec)


def _describe(error: BaseException) -> str:
    """The first real error, not the TaskGroup's wrapper around it."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


def main(argv: list[str]) -> int:
    config_path, out_path = Path(argv[0]), Path(argv[1])
    config = ChildConfig.read(config_path)
    try:
        if argv[2:] == ["--schema"]:
            result = asyncio.run(create_schema(_workload(config)))
        else:
            result = run(config)
    except Exception as error:
        result = {
            "status": "error",
            "error": _describe(error),
            "traceback": traceback.format_exc()[-4000:],
        }
    out_path.write_text(json.dumps(result))
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
