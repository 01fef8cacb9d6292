"""A webhook receiver that hangs does not slow resumes; how fast webhooks arrive.

Three measurements, on one store kind (``--store sqlite`` or a PostgreSQL URL):

1. Resume latency through a real ``symfonic serve`` whose webhook receiver
   holds every request for 30 s (the request timeout is 30 s too), against a
   second ``symfonic serve`` with no webhook and a third whose receiver answers
   at once (which separates what a hanging receiver costs from what owing the
   events costs), cycles rotating among the three so that a drifting machine
   moves them alike: p50/p95 of each, and the ratios.
2. Delivery latency: from the moment the store recorded a pause's creation
   (the payload's ``timestamp``) to its receipt by a fast receiver, over
   pauses made at random moments (the dispatcher polls every 250 ms).
3. Throughput of one dispatcher: deliveries per second to a fast receiver,
   from an outbox already holding ``--backlog`` deliveries (in-process).

    python -m bench.webhook_receiver_hang --store sqlite --cycles 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from bench.probes.pg_admin import create_database, database_url, drop_database

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MESSAGE = "Pay alice 42 EUR for the design work"
HANG_SECONDS = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Receiver:
    """A threaded HTTP receiver: holds each request ``hang`` seconds, records arrivals."""

    def __init__(self, hang: float = 0.0) -> None:
        self.hang, self.arrivals = hang, list[tuple[float, dict[str, object]]]()
        self._release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.arrivals.append((time.time(), json.loads(body)))
                if receiver.hang:
                    receiver._release.wait(receiver.hang)
                try:
                    self.send_response(200)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def _serving(store: str, *options: str) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "SYMFONIC_API_KEYS": "", "SYMFONIC_WEBHOOK_SECRET": SECRET}
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
        *options,
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise SystemExit("a server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _cycle(client: httpx.Client) -> float:
    """One pause and its resume; the resume's latency in seconds."""
    session = client.post("/v1/sessions", json={}).json()["session_id"]
    turn = client.post(
        f"/v1/sessions/{session}/turns",
        json={"message": MESSAGE},
        headers={"Accept": "application/json"},
    ).json()
    token = turn["pause"]["token"]
    started = time.perf_counter()
    resumed = client.post(
        "/v1/resume",
        json={"token": token, "answer": {"decision": "approve"}},
        headers={"Accept": "application/json"},
    )
    elapsed = time.perf_counter() - started
    if resumed.json().get("status") != "complete":
        raise SystemExit(f"a resume ended {resumed.text[:200]}")
    return elapsed


def _quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


def hang(stores: Iterator[str], cycles: int) -> None:
    hanging, fast = Receiver(hang=HANG_SECONDS), Receiver()
    timeout = ["--webhook-timeout", str(HANG_SECONDS)]
    try:
        with (
            _serving(next(stores)) as plain,
            _serving(next(stores), "--webhook", fast.url, *timeout) as quick,
            _serving(next(stores), "--webhook", hanging.url, *timeout) as hung,
            httpx.Client(base_url=plain, timeout=60) as on_plain,
            httpx.Client(base_url=quick, timeout=60) as on_quick,
            httpx.Client(base_url=hung, timeout=60) as on_hung,
        ):
            arms = [
                ("no webhook", on_plain),
                ("fast receiver", on_quick),
                ("hanging receiver", on_hung),
            ]
            for _, client in arms:
                for _ in range(5):
                    _cycle(client)  # warm-up
            times: dict[str, list[float]] = {name: [] for name, _ in arms}
            for index in range(cycles):
                for name, client in arms[index % 3 :] + arms[: index % 3]:
                    times[name].append(_cycle(client))
    finally:
        held = len(hanging.arrivals)
        hanging.close()
        fast.close()
    print(
        f"resume latency over {cycles} cycles each, the hanging receiver holding {held} "
        "requests open:"
    )
    figures = {name: _quantiles(values) for name, values in times.items()}
    for name, (p50, p95) in figures.items():
        print(f"  {name:17} p50 {p50 * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms")
    (p50a, p95a), (p50f, p95f), (p50h, p95h) = figures.values()
    print(f"  hanging / none    p50 {p50h / p50a:6.2f}     p95 {p95h / p95a:6.2f}")
    print(f"  hanging / fast    p50 {p50h / p50f:6.2f}     p95 {p95h / p95f:6.2f}")


def latency(stores: Iterator[str], pauses: int) -> None:
    receiver = Receiver()
    try:
        hook = ["--webhook", receiver.url, "--webhook-event", "pause.created"]
        with _serving(next(stores), *hook) as url, httpx.Client(base_url=url, timeout=30) as client:
            for _ in range(pauses):
                time.sleep(random.uniform(0, 0.25))  # out of step with the dispatcher's polls
                session = client.post("/v1/sessions", json={}).json()["session_id"]
                client.post(f"/v1/sessions/{session}/turns", json={"message": MESSAGE})
            deadline = time.monotonic() + 10
            while len(receiver.arrivals) < pauses and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        receiver.close()
    delays = [
        at - datetime.fromisoformat(str(payload["timestamp"])).timestamp()
        for at, payload in receiver.arrivals
    ]
    p50, p95 = _quantiles(delays)
    print(
        f"delivery latency, recorded change to receipt, {len(delays)} of {pauses} pauses: "
        f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms"
    )


async def _throughput(store: str, backlog: int) -> None:
    import anyio

    from symfonic import Webhook, WebhookSettings
    from symfonic.agent.service.host import ServiceHost
    from symfonic.agent.service.webhook_dispatch import WebhookDispatcher
    from symfonic.demo import demo_agent

    receiver = Receiver()
    agent = demo_agent(store)
    host = ServiceHost([agent])
    await host.open()
    try:
        hook = Webhook(receiver.url, SECRET, events={"pause.created"})
        dispatcher = WebhookDispatcher(host, [hook], WebhookSettings())
        await dispatcher.register()
        for _ in range(backlog):
            await agent.run(MESSAGE)
        started = time.time()
        async with anyio.create_task_group() as tasks:
            await tasks.start(dispatcher.run)
            while True:
                if len(receiver.arrivals) >= backlog:
                    break
                await anyio.sleep(0.01)
            tasks.cancel_scope.cancel()
        seconds = max(at for at, _ in receiver.arrivals) - started
    finally:
        await host.aclose()
        receiver.close()
    print(
        f"one dispatcher (concurrency {WebhookSettings.concurrency}): {backlog} deliveries in "
        f"{seconds:.2f} s = {backlog / seconds:.0f} deliveries/s"
    )


@contextmanager
def _stores(kind: str) -> Iterator[Iterator[str]]:
    """Fresh stores of one kind, one per server."""
    made: list[str] = []

    def fresh(directory: str) -> Iterator[str]:
        while True:
            if kind == "sqlite":
                yield f"sqlite:///{Path(directory) / uuid.uuid4().hex}.db"
                continue
            name = f"webhook_bench_{uuid.uuid4().hex[:8]}"
            create_database(kind, name)
            made.append(name)
            yield database_url(kind, name)

    with tempfile.TemporaryDirectory() as directory:
        try:
            yield fresh(directory)
        finally:
            for name in made:
                drop_database(kind, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--store", default="sqlite", help="sqlite, or a postgresql:// URL")
    parser.add_argument("--cycles", type=int, default=60, help="resumes per server")
    parser.add_argument("--pauses", type=int, default=100, help="pauses for delivery latency")
    parser.add_argument("--backlog", type=int, default=1000, help="deliveries for throughput")
    parser.add_argument("--parts", default="hang,latency,throughput", help="which to measure")
    options = parser.parse_args()
    parts = options.parts.split(",")
    with _stores(options.store) as stores:
        if "hang" in parts:
            hang(stores, options.cycles)
        if "latency" in parts:
            latency(stores, options.pauses)
        if "throughput" in parts:
            asyncio.run(_throughput(next(stores), options.backlog))


if __name__ == "__main__":
    main()
