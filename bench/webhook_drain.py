"""How fast the webhook outbox drains, and whether a bad receiver slows the good ones.

One dispatcher, in this process, with the default ``WebhookSettings``, sends to
a receiver in a child process (a bare asyncio HTTP/1.1 server, so the receiver
is never what is measured). Three measurements, each on a fresh store:

1. **drain**: ``--pauses`` pauses are made, then all expire: two deliveries
   each (``pause.created``, ``pause.expired``) to one fast URL, waiting before
   the dispatcher starts; the time until the last arrives.
2. **burst, alone**: for ``--burst`` seconds, ``--makers`` tasks make
   ``--rate`` pauses a second between them (200: the soak's full load through
   HTTP was about 180), in this process, while the dispatcher sends
   ``pause.created`` to one fast URL: commit-to-receipt p50 and p99, and how long after the burst's
   end the last event arrived.
3. **burst, beside bad receivers**: the same, with three more URLs subscribed:
   one that never answers, one that answers 500, one that answers 301.

    python -m bench.webhook_drain --store sqlite
    python -m bench.webhook_drain --store postgresql://postgres@127.0.0.1:5432/test

Figures go in docs/webhooks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import ExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.http_bench import free_port
from bench.stores import fresh_store

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
STATUS = {"/ok": 200, "/fail": 500, "/moved": 301}
BAD = ("/hang", "/fail", "/moved")


# the receiver, in its own process


async def _receive(port: int) -> None:
    arrivals: dict[str, list[tuple[float, float]]] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                length = next(
                    (int(line[15:]) for line in head if line[:15].lower() == "content-length:"),
                    0,
                )
                body = await reader.readexactly(length) if length else b""
                if method == "GET":
                    answer = json.dumps(arrivals).encode()
                    if path == "/reset":
                        arrivals.clear()
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(answer))
                    writer.write(answer)
                    continue
                at = time.time()
                sent = datetime.fromisoformat(json.loads(body)["timestamp"]).timestamp()
                arrivals.setdefault(path, []).append((at, at - sent))
                if path == "/hang":
                    await asyncio.sleep(3600)
                writer.write(b"HTTP/1.1 %d X\r\ncontent-length: 0\r\n\r\n" % STATUS[path])
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


class Receiver:
    """The child process, and what it has received, by path."""

    def __init__(self) -> None:
        self.port = free_port()
        command = [sys.executable, "-m", "bench.webhook_drain", "--receiver", str(self.port)]
        self.process = subprocess.Popen(command)
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def ready(self) -> None:
        with anyio.fail_after(10):
            while True:
                try:
                    await self.arrivals(reset=True)
                    return
                except httpx.TransportError:
                    await anyio.sleep(0.05)

    async def arrivals(self, *, reset: bool = False) -> dict[str, list[tuple[float, float]]]:
        got: dict[str, list[tuple[float, float]]] = (
            await self.http.get("/reset" if reset else "/arrivals")
        ).json()
        return got

    async def close(self) -> None:
        await self.http.aclose()
        self.process.terminate()
        self.process.wait()


# the sender: a dispatcher with the defaults, and a store to fill


@asynccontextmanager
async def _dispatching(url: str, hooks: Sequence[str], events: Sequence[str]) -> AsyncIterator[Any]:
    from symfonic import Webhook
    from symfonic.agent.service.host import ServiceHost
    from symfonic.agent.service.webhook_dispatch import WebhookDispatcher
    from symfonic.demo import demo_agent

    host = ServiceHost([demo_agent(url)])
    await host.open()
    try:
        webhooks = [Webhook(hook, SECRET, events=set(events)) for hook in hooks]
        dispatcher = WebhookDispatcher(host, webhooks)
        await dispatcher.register()
        yield host.store, dispatcher
    finally:
        await host.aclose()


async def _make_pause(store: Any) -> None:
    """A session and its pause, as a turn that paused writes them (an hour to answer)."""
    from symfonic.core.contracts.store import (
        CheckpointRecord,
        NewPause,
        PauseRecord,
        SessionRecord,
    )
    from symfonic.core.contracts.types import InteractionKind, PauseState

    session_id, pause_id, now = uuid.uuid4().hex, uuid.uuid4().hex, datetime.now(UTC)
    await store.create_session(SessionRecord(session_id, "bench", "bench", 0, {}, now))
    pause = PauseRecord(
        pause_id=pause_id,
        interrupt_id="int_1",
        tool_call_id="call_1",
        kind=InteractionKind.APPROVAL,
        query="pay?",
        response_schema={"type": "object"},
        expires_at=now + timedelta(hours=1),
        session_id=session_id,
        principal="bench",
        agent="bench",
        audience=None,
        base_revision=0,
        state=PauseState.PENDING,
        created_at=now,
    )
    checkpoint = CheckpointRecord(pause_id, session_id, 1, 0, {"messages": []})
    await store.record_pause(NewPause(pause, checkpoint))


async def _until(receiver: Receiver, path: str, count: int, within: float) -> list[Any]:
    deadline = time.monotonic() + within
    while True:
        got = (await receiver.arrivals()).get(path, [])
        if len(got) >= count or time.monotonic() > deadline:
            return got
        await anyio.sleep(0.2)


async def drain(url: str, receiver: Receiver, pauses: int, within: float) -> str:
    async with _dispatching(url, [receiver.url("/ok")], ["pause.created", "pause.expired"]) as (
        store,
        dispatcher,
    ):
        for start in range(0, pauses, 50):
            async with anyio.create_task_group() as makers:
                for _ in range(min(50, pauses - start)):
                    makers.start_soon(_make_pause, store)
        await store.sweep(datetime.now(UTC) + timedelta(hours=2))
        await receiver.arrivals(reset=True)
        started = time.time()
        async with anyio.create_task_group() as tasks:
            await tasks.start(dispatcher.run)
            got = await _until(receiver, "/ok", 2 * pauses, within)
            tasks.cancel_scope.cancel()
    if len(got) < 2 * pauses:
        return f"drain: {len(got)} of {2 * pauses} deliveries within {within:g} s"
    seconds = max(at for at, _ in got) - started
    rate = 2 * pauses / seconds
    return f"drain: {2 * pauses} deliveries in {seconds:.1f} s ({rate:.0f}/s)"


async def burst(
    url: str,
    receiver: Receiver,
    paths: Sequence[str],
    options: argparse.Namespace,
) -> str:
    seconds, makers, rate, within = options.burst, options.makers, options.rate, options.within
    hooks = [receiver.url(path) for path in paths]
    async with _dispatching(url, hooks, ["pause.created"]) as (store, dispatcher):
        await receiver.arrivals(reset=True)
        made = 0

        async def make(until: float, first: float) -> None:
            """Pauses at ``rate / makers`` a second each, or as fast as the store takes them."""
            nonlocal made
            every, due = makers / rate, first
            while time.monotonic() < until:
                await anyio.sleep(max(0.0, due - time.monotonic()))
                await _make_pause(store)
                made += 1
                due += every

        async with anyio.create_task_group() as tasks:
            await tasks.start(dispatcher.run)
            start = time.monotonic()
            async with anyio.create_task_group() as making:
                for index in range(makers):
                    making.start_soon(make, start + seconds, start + index / rate)
            ended = time.time()
            got = await _until(receiver, "/ok", made, within)
            tasks.cancel_scope.cancel()
    delays = sorted(delay for _, delay in got)
    cuts = statistics.quantiles(delays, n=100) if len(delays) > 1 else delays * 99
    late = max(at for at, _ in got) - ended if got else float("nan")
    tail = (
        f"the last {late:.2f} s after the burst's end"
        if len(got) >= made
        else f"only {len(got)} of {made} within {within:g} s of the burst's end"
    )
    return (
        f"{made} pauses in {seconds:g} s ({made / seconds:.0f}/s); fast receiver: "
        f"p50 {cuts[49] * 1000:.0f} ms, p99 {cuts[98] * 1000:.0f} ms from commit to receipt, "
        f"{tail}"
    )


async def measure(stores: Sequence[str], options: argparse.Namespace) -> None:
    """The three measurements, each on a store of its own."""
    receiver = Receiver()
    try:
        await receiver.ready()
        print(await drain(stores[0], receiver, options.pauses, options.within), flush=True)
        alone = await burst(stores[1], receiver, ["/ok"], options)
        print(f"burst, alone: {alone}", flush=True)
        beside = await burst(stores[2], receiver, ["/ok", *BAD], options)
        print(f"burst, beside hang/500/301: {beside}", flush=True)
    finally:
        await receiver.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--store", default="sqlite", help="sqlite, or a postgresql:// URL")
    parser.add_argument("--pauses", type=int, default=10_000, help="pauses for the drain")
    parser.add_argument("--burst", type=float, default=10.0, help="seconds of the burst")
    parser.add_argument("--makers", type=int, default=8, help="tasks making pauses")
    parser.add_argument(
        "--rate", type=float, default=200.0, help="pauses a second in the burst, all makers"
    )
    parser.add_argument("--within", type=float, default=120.0, help="seconds to wait at most")
    parser.add_argument("--receiver", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.receiver:
        asyncio.run(_receive(options.receiver))
        return
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        names = [f"webhook_drain_{uuid.uuid4().hex[:8]}" for _ in range(3)]
        stores = [
            stack.enter_context(fresh_store(options.store, Path(directory), name)) for name in names
        ]
        print(f"store: {options.store.split('@')[-1]}", flush=True)
        anyio.run(measure, stores, options)


if __name__ == "__main__":
    main()
