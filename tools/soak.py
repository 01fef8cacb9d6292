"""The soak: hours of load on one ``symfonic serve``, watched from outside.

``python tools/soak.py --minutes 30`` starts a real ``symfonic serve`` (the
scripted demo agent) on an embedded SQLite file, or on ``--store``, and keeps
``--clients`` HTTP clients looping session → turn → resume for the whole time.
Every ``--every`` seconds it samples what an operator would watch on that
host: the server's resident memory (and the anonymous part of it), its open
file descriptors, and the sizes of the database file, its WAL and its shared
memory index. A leak or a file that never shrinks shows as a column that keeps
climbing; a bounded service shows flat columns after the first minutes.

The samples go to ``--out`` as JSON and as a Markdown table (``soak.md``).
``--python`` serves another checkout's build, so a fix can be measured
against the code before it with the same load and the same sampling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):  # `python tools/soak.py`: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.http_bench import APPROVE, JSON_ONLY, MESSAGE, serving
from bench.stats import percentile


@dataclass(frozen=True)
class Sample:
    minute: float
    cycles: int
    errors: int
    rss_mb: float
    anon_mb: float
    fds: int
    db_mb: float
    wal_mb: float
    shm_mb: float


def _megabytes(path: Path) -> float:
    return round(path.stat().st_size / 2**20, 1) if path.exists() else 0.0


def _memory_mb(pid: int) -> tuple[float, float]:
    """Resident and anonymous resident memory of ``pid``, from ``/proc``."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value
    return (
        round(int(fields["VmRSS"].split()[0]) / 1024, 1),
        round(int(fields["RssAnon"].split()[0]) / 1024, 1),
    )


class Load:
    """Clients cycling until told to stop; counts cycles, errors and resume latencies."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.cycles = 0
        self.errors = 0
        self.resume_seconds: list[float] = []
        self.last_error = ""
        self.stopping = False

    async def client(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as http:
            while not self.stopping:
                try:
                    await self._cycle(http)
                    self.cycles += 1
                except (httpx.HTTPError, KeyError, ValueError) as error:
                    self.errors += 1
                    self.last_error = f"{type(error).__name__}: {error}"
                    await asyncio.sleep(0.1)

    async def _cycle(self, http: httpx.AsyncClient) -> None:
        session = (await http.post("/v1/sessions", json={})).json()["session_id"]
        turn = await http.post(
            f"/v1/sessions/{session}/turns", json={"message": MESSAGE}, headers=JSON_ONLY
        )
        token = turn.json()["pause"]["token"]
        started = time.perf_counter()
        resumed = await http.post(
            "/v1/resume", json={"token": token, "answer": APPROVE}, headers=JSON_ONLY
        )
        if resumed.json().get("status") != "complete":
            raise ValueError(f"a resume did not complete: {resumed.text[:200]}")
        self.resume_seconds.append(time.perf_counter() - started)


async def _soak(url: str, pid: int, db: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    load = Load(url)
    samples: list[Sample] = []
    began = time.monotonic()
    end = began + args.minutes * 60

    def sample() -> None:
        rss, anon = _memory_mb(pid)
        files = [Path(f"{db}{suffix}") for suffix in ("", "-wal", "-shm")] if db else []
        db_mb, wal_mb, shm_mb = (_megabytes(f) for f in files) if files else (0.0, 0.0, 0.0)
        row = Sample(
            minute=round((time.monotonic() - began) / 60, 1),
            cycles=load.cycles,
            errors=load.errors,
            rss_mb=rss,
            anon_mb=anon,
            fds=len(os.listdir(f"/proc/{pid}/fd")),
            db_mb=db_mb,
            wal_mb=wal_mb,
            shm_mb=shm_mb,
        )
        samples.append(row)
        print(" ".join(f"{key}={value}" for key, value in asdict(row).items()), flush=True)

    clients = [asyncio.create_task(load.client()) for _ in range(args.clients)]
    sample()
    while time.monotonic() < end:
        await asyncio.sleep(min(args.every, max(0.0, end - time.monotonic())))
        sample()
    load.stopping = True
    await asyncio.gather(*clients)
    latencies = sorted(load.resume_seconds)
    return {
        "minutes": args.minutes,
        "clients": args.clients,
        "cycles": load.cycles,
        "errors": load.errors,
        "last_error": load.last_error,
        "resume_p50_ms": round(percentile(latencies, 50) * 1000, 1) if latencies else None,
        "resume_p99_ms": round(percentile(latencies, 99) * 1000, 1) if latencies else None,
        "samples": [asdict(row) for row in samples],
    }


def markdown(result: dict[str, Any], label: str) -> str:
    """The samples as a table, headed by what ran and how it went."""
    lines = [
        f"### {label}",
        "",
        f"{result['minutes']} min, {result['clients']} clients, {result['cycles']} cycles, "
        f"{result['errors']} errors, resume p50 {result['resume_p50_ms']} ms, "
        f"p99 {result['resume_p99_ms']} ms",
        "",
        "| minute | cycles | RSS MB | anon MB | fds | db MB | WAL MB | shm MB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in result["samples"]:
        lines.append(
            f"| {s['minute']} | {s['cycles']} | {s['rss_mb']} | {s['anon_mb']} | {s['fds']} "
            f"| {s['db_mb']} | {s['wal_mb']} | {s['shm_mb']} |"
        )
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python tools/soak.py", description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30.0, help="how long (default: 30)")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (default: 8)")
    p.add_argument("--every", type=float, default=60.0, help="seconds between samples (60)")
    p.add_argument("--store", help="store URL (default: a fresh SQLite file under --out)")
    p.add_argument(
        "--python", default=sys.executable, help="interpreter whose symfonic serves (this one)"
    )
    p.add_argument("--label", default="soak", help="names the table and the output files")
    p.add_argument("--out", type=Path, default=Path("bench/results"), help="where results go")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    db: Path | None = None
    store = args.store
    if store is None:
        db = (args.out / f"{args.label}.db").resolve()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        store = f"sqlite:///{db}"
    elif store.startswith("sqlite:///"):
        db = Path(store.removeprefix("sqlite:///"))
    with serving(store, args.out / f"{args.label}.log", python=args.python) as server:
        assert server.pid is not None
        result = asyncio.run(_soak(server.url, server.pid, db, args))
    (args.out / f"{args.label}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{args.label}.md").write_text(markdown(result, args.label))
    print(f"results: {args.out / args.label}.json, .md")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
