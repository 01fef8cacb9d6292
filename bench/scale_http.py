"""The scale benchmark's HTTP figures: what a front end sees at each size.

A ``symfonic serve`` process (uvicorn on a loopback port, the sweeper off)
serves the store the benchmark grew; one httpx client in this process times:

- ``GET /v1/pauses`` (first page of 50, with its total) for the principal who
  owns the same 60 pending pauses at every size and for a ``finance`` holder;
- the feed's snapshot, ``GET /v1/pauses/events`` until its ``pauses.snapshot``
  frame has arrived, for the ``finance`` holder;
- 200 feed subscribers (200 principals, each with a full first page at 100k)
  connected, dropped, and reconnecting at once: the time until the last of
  them has its snapshot, and the server's resident memory before the first
  connection, at its peak, and once all 200 have gone again.

The server is its own process so that its memory is its own, read from
``/proc/<pid>/status``.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
from anyio.abc import Process

from bench.scale_load import SCOPE, STEADY

SAMPLES = 50
SUBSCRIBERS = 200
HOLDER = "carol"
SNAPSHOT = b"event: pauses.snapshot"
Figures = dict[str, float]
Percentiles = Callable[[list[float]], tuple[float, float]]


def _keys() -> str:
    people = [f"user{n}=key-user{n}" for n in range(SUBSCRIBERS)]
    return ",".join([*people, f"{STEADY}=key-{STEADY}", f"{HOLDER}=key-{HOLDER}:{SCOPE}"])


def _bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{name}"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@asynccontextmanager
async def _serving(url: str) -> AsyncIterator[tuple[str, int]]:
    """``symfonic serve`` on the store at ``url``, once healthy: its base URL and pid."""
    port = _free_port()
    command = [sys.executable, "-m", "symfonic", "serve", "--store", url, "--port", str(port)]
    command += ["--sweep-interval", "0", "--log-level", "warning"]
    env = {**os.environ, "SYMFONIC_API_KEYS": _keys()}
    log = Path(tempfile.mkdtemp(prefix="symfonic-scale-")) / "server.log"
    with log.open("wb") as sink:
        process = await anyio.open_process(command, stdout=sink, stderr=sink, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        await _until_healthy(base, process)
        yield base, process.pid
    except Exception as error:
        raise RuntimeError(f"{error}; the server's log:\n{log.read_text()[-3000:]}") from error
    finally:
        process.terminate()  # our own child, by its handle
        await process.wait()


async def _until_healthy(base: str, process: Process) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=2) as client:
        for _ in range(600):
            if process.returncode is not None:
                raise RuntimeError(f"the server stopped with code {process.returncode}")
            try:
                if (await client.get("/v1/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await anyio.sleep(0.1)
    raise RuntimeError("the server was not healthy within 60 s")


async def _timed(step: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started


async def _first_page(client: httpx.AsyncClient, who: str) -> None:
    answer = await client.get("/v1/pauses", params={"limit": 50}, headers=_bearer(who))
    answer.raise_for_status()
    assert len(answer.json()["pauses"]) == 50, answer.text[:200]


async def _snapshot(client: httpx.AsyncClient, who: str) -> None:
    """Open ``who``'s feed and read until its snapshot frame is whole, then leave."""
    async with _feed(client, who) as stream:
        await _read_snapshot(stream, who)


def _feed(client: httpx.AsyncClient, who: str) -> Any:
    headers = {**_bearer(who), "Accept": "text/event-stream"}
    return client.stream("GET", "/v1/pauses/events", headers=headers)


async def _read_snapshot(stream: httpx.Response, who: str) -> None:
    stream.raise_for_status()
    seen = b""
    async for chunk in stream.aiter_bytes():
        seen += chunk
        start = seen.find(SNAPSHOT)
        if start >= 0 and seen.find(b"\n\n", start) >= 0:
            return
    raise RuntimeError(f"{who}'s feed ended before its snapshot")


async def _all_at_once(client: httpx.AsyncClient, *, hold: bool = False) -> float:
    """Every subscriber's snapshot at once: seconds until the last has it.

    With ``hold``, each keeps its connection open until all have their snapshot.
    """
    started = time.perf_counter()
    done: list[float] = []
    everyone_in = anyio.Event()

    async def subscribe(who: str) -> None:
        async with _feed(client, who) as stream:
            await _read_snapshot(stream, who)
            done.append(time.perf_counter() - started)
            if len(done) == SUBSCRIBERS:
                everyone_in.set()
            if hold:
                await everyone_in.wait()

    async with anyio.create_task_group() as group:
        for n in range(SUBSCRIBERS):
            group.start_soon(subscribe, f"user{n}")
    return max(done)


async def _subscribers(client: httpx.AsyncClient, pid: int, figures: Figures) -> None:
    before = _rss_mib(pid)
    peaks = [before]

    async def sample() -> None:
        while True:
            peaks.append(_rss_mib(pid))
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as group:
        group.start_soon(sample)
        await _all_at_once(client, hold=True)  # connected, then all dropped together
        seconds = await _all_at_once(client)  # all reconnecting at once
        group.cancel_scope.cancel()
    peak = max(peaks)
    await anyio.sleep(1)  # the server notices the last disconnections
    figures["200 feeds reconnect s"] = seconds
    figures["200 feeds peak RSS growth MiB"] = peak - before
    figures["200 feeds RSS kept MiB"] = _rss_mib(pid) - before


async def http_figures(url: str, figures: Figures, percentiles: Percentiles) -> None:
    """Add the HTTP figures of the store at ``url`` to ``figures``.

    Each list and snapshot is on a new connection, so that what the store costs
    is measured apart from what a kept-alive connection saves; one figure shows
    the kept-alive page.
    """
    fresh = httpx.Limits(max_connections=SUBSCRIBERS + 10, max_keepalive_connections=0)
    async with _serving(url) as (base, pid):
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=fresh) as client:
            await _first_page(client, STEADY)  # the server's first request warms it
            for label, who in (("own 60", STEADY), ("scope", HOLDER)):
                pages = await _samples(partial(_first_page, client, who))
                figures[f"http list {label} p50"], figures[f"http list {label} p95"] = percentiles(
                    pages
                )
            feed = await _samples(lambda: _snapshot(client, HOLDER))
            figures["http snapshot p50"], figures["http snapshot p95"] = percentiles(feed)
            await _subscribers(client, pid, figures)
        async with httpx.AsyncClient(base_url=base, timeout=60) as kept:
            await _first_page(kept, HOLDER)
            kept_alive = await _samples(lambda: _first_page(kept, HOLDER))
            figures["http list scope kept-alive p50"] = percentiles(kept_alive)[0]


async def _samples(step: Callable[[], Awaitable[Any]]) -> list[float]:
    return [await _timed(step) for _ in range(SAMPLES)]
