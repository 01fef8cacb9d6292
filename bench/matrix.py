"""The configuration matrix and the life of each configuration's child process.

Configurations run one at a time, never overlapping: the WAL volume of the
PostgreSQL probe is cluster-wide and CPU time is shared, so a neighbour would
pollute both. Systems are interleaved innermost (store → history → concurrency →
system), so a slow drift in the machine's state touches every system alike, and
the whole matrix runs in rounds, the systems' order rotated each round, so a
configuration's figure is the median of measurements taken minutes apart.

Each configuration gets a fresh store: a new SQLite file, or a new PostgreSQL
database created here and dropped afterwards, whatever the child did.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.config import ChildConfig
from bench.stores import fresh_store
from bench.workloads.base import StoreKind

ROOT = Path(__file__).resolve().parent.parent
# Above this share of CPU in use by others while the harness idles, a result is
# flagged: on 2 cores, a neighbour's tests halve what the benchmark can do.
BUSY_THRESHOLD = 0.15
# Seconds a child has after SIGTERM (stopping a server, dropping a database).
GRACE = 25.0


@dataclass(frozen=True)
class Store:
    kind: StoreKind
    # "sqlite", or the admin URL of the PostgreSQL server (its database is not used).
    url: str


def configurations(
    template: ChildConfig,
    stores: list[Store],
    histories: list[int],
    concurrencies: list[int],
    systems: list[str],
    *,
    rotation: int = 0,
    sources: Mapping[str, str] | None = None,
) -> Iterator[tuple[Store, ChildConfig]]:
    """One round of the matrix; ``rotation`` shifts which system goes first.

    ``sources``: the source tree each system named there imports (``--baseline``).
    """
    shift = rotation % len(systems) if systems else 0
    ordered = systems[shift:] + systems[:shift]
    for store in stores:
        for history in histories:
            for concurrency in concurrencies:
                for system in ordered:
                    yield (
                        store,
                        replace(
                            template,
                            system=system,
                            store=store.kind,
                            location="",
                            history=history,
                            concurrency=concurrency,
                            source=(sources or {}).get(system, ""),
                        ),
                    )


def child_env(source: str = "") -> dict[str, str]:
    """The child's environment; ``source``, if given, is imported before what is installed."""
    env = dict(os.environ)
    # The child runs from the root, whatever the parent's working folder.
    paths = (str(ROOT), source, env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _stop(child: subprocess.Popen[bytes]) -> None:
    child.send_signal(signal.SIGTERM)  # our own child, by its handle
    try:
        child.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def exit_on_sigterm() -> None:
    """Make SIGTERM raise SystemExit, so ``finally`` blocks stop servers and drop databases."""

    def exit_now(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, exit_now)


def run_bounded(command: list[str], log: Path, timeout: float, env: dict[str, str]) -> int | None:
    """Run ``command`` from the root, its output in ``log``: its exit code, None if timed out.

    Past ``timeout``, or if this process is interrupted, the child gets SIGTERM
    (which lets it stop a server it started and drop a database), then SIGKILL.
    """
    with log.open("w") as sink:
        child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            return child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            return None
        except BaseException:
            _stop(child)  # interrupted: never leave a child running behind us
            raise


def tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def _run_child(
    config: ChildConfig, workdir: Path, stem: str, timeout: float, *flags: str
) -> dict[str, Any]:
    """``python -m bench.child`` with ``flags``: its result, or an error that says why not."""
    config_path, out_path = workdir / f"{stem}.json", workdir / f"{stem}.out.json"
    log_path = workdir / f"{stem}.log"
    config.write(config_path)
    out_path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "bench.child", str(config_path), str(out_path), *flags]
    began = time.monotonic()
    code = run_bounded(command, log_path, timeout, child_env(config.source))
    wall = round(time.monotonic() - began, 1)
    if code is None or not out_path.exists():
        problem = f"timed out after {timeout:.0f} s" if code is None else f"exited {code}"
        error = f"{problem} without a result"
        return {"status": "error", "error": error, "log": tail(log_path), "wall_seconds": wall}
    result: dict[str, Any] = json.loads(out_path.read_text())
    return result | {"wall_seconds": wall}


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_elsewhere(seconds: float = 0.3) -> float:
    """Share of the machine's CPU in use while this process sleeps: others' load."""
    busy0, total0 = _cpu_times()
    time.sleep(seconds)
    busy1, total1 = _cpu_times()
    return (busy1 - busy0) / max(1, total1 - total0)


def run_configuration(
    store: Store, config: ChildConfig, workdir: Path, index: int, timeout: float, keep: bool
) -> dict[str, Any]:
    """On a fresh store, create the schema in one child process, then measure in another.

    The store is removed afterwards (unless ``keep``), whatever the children did.
    """
    busy = busy_elsewhere()
    stem = f"{index:03d}-{config.system}-{config.store}-h{config.history}-c{config.concurrency}"
    sqlite = store.kind == "sqlite"
    name = f"{index:03d}-{config.system}" if sqlite else f"symfonic_bench_{os.getpid()}_{index:03d}"
    with fresh_store(store.url, workdir, name, keep=keep) as url:
        config = replace(config, location=url.removeprefix("sqlite:///"))
        result = _run_child(config, workdir, f"{stem}-schema", timeout, "--schema")
        if result.get("status") == "ok":
            result = _run_child(config, workdir, stem, timeout)
        else:
            result["error"] = f"creating the schema: {result.get('error')}"
    result["cpu_busy_before"] = round(busy, 3)
    if busy > BUSY_THRESHOLD:
        result.setdefault("notes", []).append(
            f"the machine was {busy:.0%} busy with other work just before this configuration"
        )
    return result


def median_rounds(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per configuration: its median round by cycles per second.

    The median round's figures are kept together (latencies, bytes, memory come
    from the same measurement as its cycles per second); every round's cycles per
    second is kept beside them, so the report can show the spread, and by round
    number (``cycles_per_second_by_round``), so it can pair a configuration's
    systems as they were measured, back to back in the same round.
    """
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in measured:
        key = (row["system"], row["store"], row["history"], row["concurrency"])
        by_key.setdefault(key, []).append(row)
    chosen: list[dict[str, Any]] = []
    for rows in by_key.values():
        ok = sorted(
            (r for r in rows if r.get("status") == "ok"), key=lambda r: r["cycles_per_second"]
        )
        if not ok:
            chosen.append(rows[-1])
            continue
        median = ok[(len(ok) - 1) // 2]
        chosen.append(
            median
            | {
                "rounds_cycles_per_second": [r["cycles_per_second"] for r in ok],
                "cycles_per_second_by_round": {
                    str(r["round"]): r["cycles_per_second"] for r in ok if "round" in r
                },
            }
        )
    return chosen
