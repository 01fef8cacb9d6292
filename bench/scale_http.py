"""The scale benchmark's HTTP figures: what a front end sees at each size.

A ``symfonic serve`` process (the sweeper off) serves the store the benchmark
grew; an httpx client in this process times ``GET /v1/pauses`` for ``steady``
and for a ``finance`` holder, that holder's feed snapshot, and 200 feed
subscribers reconnecting at once, while the server's own resident memory is
read from ``/proc/<pid>/status`` (docs/scale.md has the table of figures).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.http_bench import serving
from bench.machine import rss_bytes
from bench.scale_load import SCOPE, STEADY
from bench.stats import p50_p95_ms, timed

SAMPLES = 50
SUBSCRIBERS = 200
HOLDER = "carol"
SNAPSHOT = b"event: pauses.snapshot"
Figures = dict[str, float]


def _keys() -> str:
    people = [f"user{n}=key-user{n}" for n in range(SUBSCRIBERS)]
    return ",".join([*people, f"{STEADY}=key-{STEADY}", f"{HOLDER}=key-{HOLDER}:{SCOPE}"])


def _bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{name}"}


def _rss_mib(pid: int) -> float:
    return rss_bytes(pid) / (1 << 20)


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


async def http_figures(url: str, figures: Figures) -> None:
    """Add the HTTP figures of the store at ``url`` to ``figures``.

    Each list and snapshot is on a new connection, so that what the store costs
    is measured apart from what a kept-alive connection saves; one figure shows
    the kept-alive page.
    """
    fresh = httpx.Limits(max_connections=SUBSCRIBERS + 10, max_keepalive_connections=0)
    log = Path(tempfile.mkdtemp(prefix="symfonic-scale-")) / "server.log"
    sweeper_off = ("--sweep-interval", "0")
    with serving(url, log, keys=_keys(), pool_size=None, flags=sweeper_off) as server:
        base, pid = server.url, server.pid
        assert pid is not None  # a server this process started
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=fresh) as client:
            await _first_page(client, STEADY)  # the server's first request warms it
            for label, who in (("own 60", STEADY), ("scope", HOLDER)):
                pages = await _samples(partial(_first_page, client, who))
                figures[f"http list {label} p50"], figures[f"http list {label} p95"] = p50_p95_ms(
                    pages
                )
            feed = await _samples(lambda: _snapshot(client, HOLDER))
            figures["http snapshot p50"], figures["http snapshot p95"] = p50_p95_ms(feed)
            await _subscribers(client, pid, figures)
        async with httpx.AsyncClient(base_url=base, timeout=60) as kept:
            await _first_page(kept, HOLDER)
            kept_alive = await _samples(lambda: _first_page(kept, HOLDER))
            figures["http list scope kept-alive p50"] = p50_p95_ms(kept_alive)[0]


async def _samples(step: Callable[[], Awaitable[Any]]) -> list[float]:
    return [await timed(step) for _ in range(SAMPLES)]
