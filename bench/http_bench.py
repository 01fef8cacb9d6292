"""The HTTP resume benchmark: a step of ``python -m bench``, or alone as
``python -m bench.http_bench --out http.json``.

The latency of ``POST /v1/resume`` (JSON, so the clock stops when the resumed
turn has published) and the resumes per second, at each level of concurrent
clients, against a real ``symfonic serve`` process on a loopback port. Every
pause is created before the clock starts; the server's and this client's CPU
seconds are read around each level's resumes, so the report can say whether
the server or the shared cores were the bound.
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
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx

from bench.matrix import exit_on_sigterm
from bench.stats import percentile
from bench.stores import DEFAULT_POSTGRES_URL, fresh_store

MESSAGE = "Pay alice 42 EUR for the design work"
APPROVE = {"decision": "approve"}
JSON_ONLY = {"Accept": "application/json"}
# The server's pool: enough connections that 16 clients never queue for one.
SERVER_POOL_SIZE = 24


@dataclass(frozen=True)
class Server:
    url: str
    # None for a server this process did not start (``--url``): its CPU is not read.
    pid: int | None


def _server_cpu(server: Server) -> float | None:
    return None if server.pid is None else process_cpu_seconds(server.pid)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    # The command name (field 2) may hold spaces; the fields after its ')' are fixed.
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")


@contextmanager
def serving(
    store: str,
    log: Path,
    *,
    keys: str = "",
    pool_size: int | None = SERVER_POOL_SIZE,
    flags: Sequence[str] = (),
    python: str = sys.executable,
) -> Iterator[Server]:
    """A ``symfonic serve`` process on loopback, once healthy.

    ``keys``: its ``SYMFONIC_API_KEYS`` (none: every caller is the local
    principal); ``pool_size``: its PostgreSQL pool (None: the default);
    ``python``: the interpreter whose installed symfonic serves, so another
    checkout's build can be measured the same way (the soak's "before").
    """
    port = free_port()
    env = {**os.environ, "SYMFONIC_API_KEYS": keys}
    if pool_size is not None:
        env["SYMFONIC_POOL_SIZE"] = str(pool_size)
    command = [python, "-m", "symfonic", "serve", "--port", str(port), "--store", store]
    command += ["--log-level", "warning", *flags]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # start-up on a loaded 2-core machine
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        yield Server(url, process.pid)
    finally:
        process.terminate()  # our own child, by its handle
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


async def _gather_limited(
    count: int, width: int, make: Callable[[], Awaitable[str]], until: float
) -> list[str]:
    """Up to ``count`` results of ``make()``, ``width`` at a time; none started after ``until``."""
    gate = asyncio.Semaphore(width)
    made: list[str] = []

    async def one() -> None:
        async with gate:
            if time.perf_counter() < until:
                made.append(await make())

    await asyncio.gather(*(one() for _ in range(count)))
    return made


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


async def measure_level(
    server: Server, clients: int, resumes: int, time_limit: float
) -> dict[str, Any]:
    """Resume up to ``resumes`` fresh pauses with ``clients`` concurrent clients."""
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    timeout = httpx.Timeout(60)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=timeout) as client:
        began = time.perf_counter()
        tokens = await _gather_limited(
            resumes, 16, lambda: _pause(client), until=began + time_limit
        )
        setup = time.perf_counter() - began
        queue: asyncio.Queue[str] = asyncio.Queue()
        for token in tokens:
            queue.put_nowait(token)
        latencies: list[float] = []
        failures: list[str] = []
        server_cpu, client_cpu = _server_cpu(server), time.process_time()
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
        server_after = _server_cpu(server)
        client_cpu = time.process_time() - client_cpu
    server_ms = None
    if server_cpu is not None and server_after is not None and latencies:
        server_ms = round(1000 * (server_after - server_cpu) / len(latencies), 2)

    done = len(latencies)
    return {
        "clients": clients,
        "requested": resumes,
        "pauses": len(tokens),
        "setup_s": round(setup, 3),
        "resumes": done,
        "failures": len(failures),
        "failure_samples": failures[:3],
        "stopped_by": "time limit" if done + len(failures) < len(tokens) else "resumes",
        "wall_s": round(wall, 3),
        "resumes_per_s": round(done / wall, 1) if wall > 0 else None,
        "p50_ms": _ms(percentile(latencies, 50)),
        "p99_ms": _ms(percentile(latencies, 99)),
        "server_cpu_ms_per_resume": server_ms,
        "client_cpu_ms_per_resume": round(1000 * client_cpu / done, 2) if done else None,
    }


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@contextmanager
def _server_on(kind: str, args: argparse.Namespace, workdir: Path) -> Iterator[Server]:
    if args.url:
        yield Server(args.url.rstrip("/"), None)
        return
    server_url = "sqlite" if kind == "sqlite" else args.postgres_url
    name = "http-bench" if kind == "sqlite" else f"symfonic_bench_http_{uuid.uuid4().hex[:10]}"
    with (
        fresh_store(server_url, workdir, name) as store,
        serving(store, workdir / "server.log") as server,
    ):
        yield server


def run(args: argparse.Namespace, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every store × level; ``save`` gets the report after each level, so a kill keeps it."""
    report: dict[str, Any] = {
        "options": {
            "stores": args.stores,
            "clients": args.clients,
            "resumes": args.resumes,
            "time_limit": args.time_limit,
            "server_pool_size": SERVER_POOL_SIZE,
            "url": args.url,
        },
        "results": [],
        "errors": [],
    }
    with TemporaryDirectory(prefix="symfonic-http-bench-") as tmp:
        root = args.workdir or Path(tmp)
        for kind in ["external"] if args.url else args.stores:
            workdir = root / kind
            workdir.mkdir(parents=True, exist_ok=True)
            try:
                with _server_on(kind, args, workdir) as server:
                    for clients in args.clients:
                        count = max(args.resumes, clients)
                        level = asyncio.run(measure_level(server, clients, count, args.time_limit))
                        report["results"].append({"store": kind} | level)
                        save(report)
                        print(_row(kind, level), flush=True)
            except Exception as error:  # one store failing must not lose the other's figures
                report["errors"].append({"store": kind, "error": _error(error)})
                save(report)
                print(f"{kind}: {_error(error)}", file=sys.stderr, flush=True)
    return report


def _row(store: str, level: dict[str, Any]) -> str:
    return (
        f"{store:<10} clients={level['clients']:<3} resumes={level['resumes']:<5} "
        f"failures={level['failures']:<3} p50={level['p50_ms']} ms  p99={level['p99_ms']} ms  "
        f"{level['resumes_per_s']} resumes/s"
    )


def _stores(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if unknown := set(names) - {"sqlite", "postgresql"}:
        raise argparse.ArgumentTypeError(f"unknown store(s) {unknown}: use sqlite,postgresql")
    return names


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.http_bench",
        description=__doc__,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--out", type=Path, required=True, help="write the results here (JSON)")
    p.add_argument("--stores", type=_stores, default="sqlite,postgresql", help="which stores")
    p.add_argument("--clients", type=_int_list, default="1,16,64", help="concurrency levels")
    p.add_argument(
        "--resumes", type=int, default=200, help="resumes per level, at least one per client"
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=30.0,
        help="seconds at most per level for creating its pauses, and again for resuming them",
    )
    p.add_argument(
        "--postgres-url",
        default=os.environ.get("SYMFONIC_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL),
        help="a PostgreSQL URL whose user may CREATE DATABASE",
    )
    p.add_argument(
        "--url",
        help="measure this already running server (e.g. one started under a profiler) "
        "instead of starting one per store; its CPU is then not read",
    )
    p.add_argument("--workdir", type=Path, help="keep each store's server.log here")
    return p


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    args = parser().parse_args(argv)

    def save(report: dict[str, Any]) -> None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")

    report = run(args, save)
    save(report | {"complete": True})
    print(f"wrote {args.out}")
    ok = not report["errors"] and all(r["failures"] == 0 for r in report["results"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
