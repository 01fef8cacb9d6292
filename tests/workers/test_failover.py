"""Two ``symfonic serve`` workers follow a PostgreSQL failover by themselves.

A private primary and a standby streaming from it (``pg_basebackup``); both workers
are given both hosts in one URL, ``target_session_attrs=read-write``. Sixteen clients
cycle pauses and resumes of a paying tool while the primary is stopped with
``pg_ctl stop -m immediate`` and the standby promoted. Health answers 503 in the gap
and 200 within 10 s of the promotion; every pause a client holds settles. With a
synchronous standby nothing is paid twice and no acknowledged resume is lost; with an
asynchronous one, what docs/storage.md ("Failover") says: a payment made again is made
under the same idempotency key.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import asyncpg
import httpx
import pytest

from http_support import APPROVE, JSON
from private_postgres import Cluster, replicated_pair
from serve_support import ALICE, Server, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

TESTS = Path(__file__).parent.parent
CLIENTS = 16
BEFORE_CRASH = 3.0  # seconds of load before the primary goes
GAP = 2.0  # seconds between the crash and the promotion
AFTER_PROMOTION = 6.0  # seconds of load after it
SETTLE_WITHIN = 30.0  # for a pause a client holds to reach its answer
WORK = {"SYMFONIC_TEST_WORK_SECONDS": "0.3"}  # payments are in flight at the crash


@dataclass
class Ledger:
    """What the clients were told, and health as each worker answered it."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # session -> note
    settled: dict[str, str] = field(default_factory=dict)  # pause -> how it ended
    held: set[str] = field(default_factory=set)  # pauses a client had a token for
    health: list[tuple[float, str, int]] = field(default_factory=list)
    retries: Counter[str] = field(default_factory=Counter)  # by route
    crashed: float = float("inf")
    across: int = 0  # resumes asked before the crash and answered after it


def multi_host(primary: Cluster, standby: Cluster) -> str:
    hosts = [url.partition("@")[2].partition("/")[0] for url in (primary.url, standby.url)]
    return f"postgresql://postgres@{','.join(hosts)}/postgres?target_session_attrs=read-write"


async def _make_synchronous(primary: Cluster) -> None:
    """Every commit waits for the standby (``synchronous_commit`` stays ``on``)."""
    connection = await asyncpg.connect(primary.url)
    try:
        await connection.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        await connection.execute("SELECT pg_reload_conf()")
        with anyio.fail_after(10):
            while True:  # the server's own state: nothing to wait on but a query
                synced = "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"
                if await connection.fetchval(synced) == 1:
                    return
                await anyio.sleep(0.05)
    finally:
        await connection.close()


async def _post(
    client: httpx.AsyncClient, path: str, body: dict[str, object], ledger: Ledger
) -> httpx.Response:
    """``body`` posted until the worker answers other than 5xx (the store is away), or
    that another attempt holds the pause."""
    while True:
        try:
            response = await client.post(path, json=body, headers=JSON)
        except httpx.TransportError:
            response = None
        if response is not None and response.status_code < 500:
            busy = response.status_code == 409 and response.json()["error"]["code"]
            if busy != "already_claimed":
                return response
        ledger.retries[path] += 1
        await anyio.sleep(0.1)


async def _client(
    number: int, workers: tuple[httpx.AsyncClient, httpx.AsyncClient], stop: anyio.Event,
    ledger: Ledger,
) -> None:
    """Cycles of a new session, a payment asked on one worker, approved on the other."""
    cycle = 0
    while not stop.is_set():
        cycle += 1
        asks, answers = workers[cycle % 2], workers[(cycle + 1) % 2]
        note = f"pay bill {number}-{cycle}"
        session = await _post(asks, "/v1/sessions", {}, ledger)
        session_id = session.json()["session_id"]
        turn: dict[str, object] = {"message": note}
        paused = await _post(asks, f"/v1/sessions/{session_id}/turns", turn, ledger)
        if paused.status_code != 200 or paused.json().get("pause") is None:
            continue  # refused (a retry found the turn running): no pause is held
        pause = paused.json()["pause"]
        ledger.held.add(pause["pause_id"])
        with anyio.fail_after(SETTLE_WITHIN):
            answer: dict[str, object] = {"token": pause["token"], "answer": APPROVE}
            asked = time.monotonic()
            done = await _post(answers, "/v1/resume", answer, ledger)
            ledger.across += asked < ledger.crashed < time.monotonic()
        outcome = done.json().get("status") or done.json()["error"]["code"]
        ledger.settled[pause["pause_id"]] = outcome
        if outcome == "complete":
            ledger.acknowledged[session_id] = note


async def _watch_health(servers: tuple[Server, Server], ledger: Ledger, stop: anyio.Event) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        while not stop.is_set():
            for server in servers:
                try:
                    status = (await client.get(f"{server.url}/v1/health")).status_code
                except httpx.TransportError:
                    status = 0
                ledger.health.append((time.monotonic(), server.url, status))
            await anyio.sleep(0.1)


def _payments(servers: tuple[Server, Server]) -> list[tuple[str, str]]:
    """(note, idempotency key) of every payment either worker made."""
    paid = []
    for server in servers:
        for line in server.output().splitlines():
            if line.startswith('{"paid"'):
                said = json.loads(line)
                paid.append((said["paid"], said["key"]))
    return paid


async def _failover(
    primary: Cluster, standby: Cluster, servers: tuple[Server, Server], ledger: Ledger
) -> float:
    """Load, the primary stopped, the standby promoted, load again; when it was promoted."""
    stop = anyio.Event()
    async with (
        httpx.AsyncClient(base_url=servers[0].url, headers=ALICE, timeout=15) as on_a,
        httpx.AsyncClient(base_url=servers[1].url, headers=ALICE, timeout=15) as on_b,
        anyio.create_task_group() as tasks,
    ):
        workers = (on_a, on_b)
        tasks.start_soon(_watch_health, servers, ledger, stop)
        async with anyio.create_task_group() as clients:
            for number in range(CLIENTS):
                clients.start_soon(_client, number, workers, stop, ledger)
            await anyio.sleep(BEFORE_CRASH)
            ledger.crashed = time.monotonic()
            await primary.crash()
            await anyio.sleep(GAP)
            await standby.promote()
            promoted = time.monotonic()
            await anyio.sleep(AFTER_PROMOTION)
            stop.set()
    return promoted


@pytest.mark.parametrize("synchronous", [True, False], ids=["synchronous", "asynchronous"])
async def test_two_workers_follow_a_failover(tmp_path: Path, synchronous: bool) -> None:
    with replicated_pair() as (primary, standby), ExitStack() as stack:
        if synchronous:
            await _make_synchronous(primary)
        url, env = multi_host(primary, standby), {**os.environ, **WORK}
        def worker(name: str) -> Server:
            agent = "workers.agents:served_agent"
            return stack.enter_context(serving(url, tmp_path / name, agent, env=env, cwd=TESTS))

        with ThreadPoolExecutor(2) as starting:  # each start-up waits for its health
            a, b = starting.map(worker, ["a.log", "b.log"])
        servers = (a, b)
        ledger = Ledger()
        promoted = await _failover(primary, standby, servers, ledger)
        async with httpx.AsyncClient(headers=ALICE, timeout=10) as client:
            revisions = {
                session_id: (await client.get(f"{servers[0].url}/v1/sessions/{session_id}"))
                .json()["revision"]
                for session_id in ledger.acknowledged
            }
        paid = _payments(servers)

    times = Counter(note for note, _ in paid)
    keys = {note: {key for n, key in paid if n == note} for note in times}
    back = []
    for server in servers:
        seen = [(at, status) for at, url, status in ledger.health if url == server.url]
        assert any(status == 503 for at, status in seen if at < promoted), "no 503 in the gap"
        back.append(min(at for at, status in seen if at > promoted and status == 200) - promoted)
    print(
        f"\nfailover ({'synchronous' if synchronous else 'asynchronous'}): "
        f"{len(ledger.held)} pauses held, {len(ledger.acknowledged)} resumes acknowledged, "
        f"{len(paid)} payments, settled {dict(Counter(ledger.settled.values()))}; "
        f"{ledger.across} resumes in flight at the crash, "
        f"{ledger.retries['/v1/resume']} tried again; healthy again "
        f"{', '.join(f'{seconds:.1f}' for seconds in back)} s after the promotion"
    )
    assert max(back) < 10, "a worker was not back within 10 s of the promotion"
    assert ledger.settled.keys() == ledger.held, "a pause a client held never settled"
    assert len(ledger.acknowledged) > CLIENTS, "the clients hardly cycled"
    assert ledger.across > 0, "no resume was in flight at the crash"
    assert all(len(each) == 1 for each in keys.values()), "a payment was made under a new key"
    if synchronous:
        assert [note for note, count in times.items() if count > 1] == [], "paid twice"
        assert set(revisions.values()) == {1}, "an acknowledged resume was lost"
