"""The HTTP resume benchmark: ``python bench/http_bench.py --out http.json``.

Measures what a front end sees when it answers pauses: the latency of
``POST /v1/resume`` (JSON variant, so the clock stops when the resumed turn
has published) and the resumes per second the service sustains, at 1, 16 and
64 concurrent clients, on SQLite and PostgreSQL. The server is a real
``symfonic serve`` process (uvicorn, the scripted demo agent) on a loopback
port; the clients are one httpx process. Every pause is created before the
clock starts, so only resumes are timed. Bounded: at most ``--resumes`` per
level and ``--time-limit`` seconds of resuming per level.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx

if __package__ in (None, ""):  # `python bench/http_bench.py`: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
MESSAGE = "Pay alice 42 EUR for the design work"
APPROVE = {"decision": "approve"}
JSON_ONLY = {"Accept": "application/json"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(store: str, log: Path) -> Iterator[str]:
    """A ``symfonic serve`` process on loopback; its base URL once healthy."""
    port = _free_port()
    env = {**os.environ, "SYMFONIC_API_KEYS": "", "SYMFONIC_POOL_SIZE": "24"}
    command = [
        sys.executable,
        "-m",
        "symfonic",
        "serve",
        "--port",
        str(port),
        "--store",
        store,
        "--log-level",
        "warning",
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{log.read_text()}")
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _pause(client: httpx.AsyncClient) -> str:
    session = (await client.post("/v1/sessions", json={})).json()["session_id"]
    turn = await client.post(
        f"/v1/sessions/{session}/turns", json={"message": MESSAGE}, headers=JSON_ONLY
    )
    outcome = turn.json()
    if outcome.get("status") != "paused":
        raise RuntimeError(f"a setup turn did not pause: {outcome}")
    return str(outcome["pause"]["token"])


async def _gather_limited(count: int, width: int, make: Any) -> list[Any]:
    gate = asyncio.Semaphore(width)

    async def one() -> Any:
        async with gate:
            return await make()

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def measure_level(url: str, clients: int, resumes: int, time_limit: float) -> dict[str, Any]:
    """Resume ``resumes`` fresh pauses with ``clients`` concurrent clients."""
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    timeout = httpx.Timeout(60)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        tokens = await _gather_limited(resumes, 16, lambda: _pause(client))
        queue: asyncio.Queue[str] = asyncio.Queue()
        for token in tokens:
            queue.put_nowait(token)
        latencies: list[float] = []
        failures: list[str] = []
        started = time.perf_counter()
        stop_at = started + time_limit

        async def worker() -> None:
            while time.perf_counter() < stop_at:
                try:
                    token = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                begin = time.perf_counter()
                response = await client.post(
                    "/v1/resume", json={"token": token, "answer": APPROVE}, headers=JSON_ONLY
                )
                elapsed = time.perf_counter() - begin
                body = response.json() if response.status_code == 200 else {}
                if body.get("status") == "complete":
                    latencies.append(elapsed)
                else:
                    failures.append(f"{response.status_code} {response.text[:120]}")

        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 2)

    return {
        "clients": clients,
        "resumes": len(latencies),
        "failures": len(failures),
        "failure_samples": failures[:3],
        "wall_s": round(wall, 3),
        "resumes_per_s": round(len(latencies) / wall, 1) if wall > 0 else None,
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
    }


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh database for one run, dropped afterwards."""
    import asyncpg

    name = f"symfonic_bench_{uuid.uuid4().hex[:10]}"
    dsn = admin_url.replace("postgresql+asyncpg://", "postgresql://")

    async def run(statement: str) -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{dsn.rpartition('/')[0]}/{name}"
    finally:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def store_for(kind: str, postgres_url: str, workdir: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'bench.db'}"
        return
    with postgres_database(postgres_url) as url:
        yield url


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with TemporaryDirectory(prefix="symfonic-http-bench-") as tmp:
        for kind in args.stores:
            workdir = Path(tmp) / kind
            workdir.mkdir()
            with (
                store_for(kind, args.postgres_url, workdir) as store,
                serving(store, workdir / "server.log") as url,
            ):
                for clients in args.clients:
                    count = max(args.resumes, clients)
                    level = asyncio.run(measure_level(url, clients, count, args.time_limit))
                    level["store"] = kind
                    results.append(level)
                    print(_row(level), flush=True)
    return {
        "benchmark": "http_resume",
        "agent": "symfonic.demo:agent (scripted model)",
        "variant": "POST /v1/resume, Accept: application/json",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "results": results,
    }


def _row(level: dict[str, Any]) -> str:
    return (
        f"{level['store']:<9} clients={level['clients']:<3} resumes={level['resumes']:<5} "
        f"failures={level['failures']:<3} p50={level['p50_ms']} ms  p99={level['p99_ms']} ms  "
        f"{level['resumes_per_s']} resumes/s"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python bench/http_bench.py", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="write the results here (JSON)")
    parser.add_argument(
        "--stores",
        type=lambda s: s.split(","),
        default=["sqlite", "postgres"],
        help="comma-separated: sqlite,postgres (default both)",
    )
    parser.add_argument(
        "--clients",
        type=lambda s: [int(p) for p in s.split(",")],
        default=[1, 16, 64],
        help="concurrency levels (default 1,16,64)",
    )
    parser.add_argument(
        "--resumes",
        type=int,
        default=200,
        help="resumes per level, at least one per client (default 200)",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=30.0,
        help="seconds of resuming per level at most (default 30)",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("SYMFONIC_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL),
        help="a PostgreSQL URL whose user may CREATE DATABASE",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    report = run(args)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["failures"] == 0 for r in report["results"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
