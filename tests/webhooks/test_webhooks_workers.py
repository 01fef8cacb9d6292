"""Two ``symfonic serve`` workers on one database, one outbox, one receiver.

- A worker killed (SIGKILL) while its receiver holds the first attempt open
  leaves the delivery leased; once the lease lapses the other worker sends it,
  with the same ``webhook-id``.
- 200 pauses made through both workers reach the receiver exactly 200 times,
  never two requests with one ``webhook-id`` open at once.
- ``pause.expiring`` and ``pause.expired`` reach it once per pause, although
  both workers sweep every 0.2 s.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import anyio
import httpx
import pytest

from serve_support import ALICE, serving
from webhook_support import SECRET, Receiver, receiving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MESSAGE = "Pay alice 42 EUR for the design work"
TESTS = Path(__file__).parents[1]  # where the agents module the workers load lives


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "SYMFONIC_WEBHOOK_SECRET": SECRET, "PYTHONPATH": path, **extra}


def _hook(receiver: Receiver, *events: str, timeout: float = 1.0) -> list[str]:
    """Serve options sending ``events`` to ``receiver``; the lease follows ``timeout``."""
    chosen = [option for event in events for option in ("--webhook-event", event)]
    return ["--webhook", receiver.url, "--webhook-timeout", f"{timeout:g}", *chosen]


async def _pause(client: httpx.AsyncClient) -> str:
    session_id = (await client.post("/v1/sessions", json={})).json()["session_id"]
    turn = await client.post(f"/v1/sessions/{session_id}/turns", json={"message": MESSAGE})
    assert turn.status_code == 200, turn.text
    return turn.text.split('"pause_id":"', 1)[1].split('"', 1)[0]


async def test_a_worker_killed_mid_send_leaves_the_delivery_to_the_other(
    store_url: str, tmp_path: Path
) -> None:
    with receiving() as receiver:
        receiver.hold = 30.0  # the first attempt is held open until the test lets go
        hook = _hook(receiver, "pause.created")
        with serving(store_url, tmp_path / "a.log", *hook, env=_env()) as a:
            async with httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a:
                pause_id = await _pause(on_a)
            await receiver.wait_for(1, within=1.0)
            a.process.kill()  # SIGKILL: it settles nothing
            a.process.wait()
        killed_at = time.monotonic()
        receiver.hold = 0.0
        receiver.released.set()
        with serving(store_url, tmp_path / "b.log", *hook, env=_env()):
            # A's lease (twice the 1 s timeout, at least timeout + 2 s) lapses; B sends it.
            await receiver.wait_for(2, within=30.0)
            await anyio.sleep(0.5)
    held, delivered = receiver.received
    assert held.id == delivered.id
    assert delivered.payload["data"]["pause_id"] == pause_id
    assert delivered.at - killed_at < 3.0 + 1.0 + 30.0
    assert len(receiver.received) == 2


async def test_two_workers_send_200_pauses_200_times_never_twice_at_once(
    store_url: str, tmp_path: Path
) -> None:
    pauses = 200
    with receiving() as receiver:
        receiver.hold = 0.01
        # Delivery is at least once: a request that outlives its timeout is sent
        # again even if the receiver took it. This test counts sends that never
        # time out, so the timeout leaves room for a receiver slowed by a busy machine.
        hook = _hook(receiver, "pause.created", timeout=10.0)
        with (
            serving(store_url, tmp_path / "a.log", *hook, env=_env()) as a,
            serving(store_url, tmp_path / "b.log", *hook, env=_env()) as b,
        ):
            async with (
                httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=30) as on_a,
                httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=30) as on_b,
            ):
                made: list[str] = []
                limit = anyio.Semaphore(8)

                async def make(client: httpx.AsyncClient) -> None:
                    async with limit:
                        made.append(await _pause(client))

                started = time.monotonic()
                async with anyio.create_task_group() as tasks:
                    for index in range(pauses):
                        tasks.start_soon(make, on_a if index % 2 else on_b)
                made_in = time.monotonic() - started
            await receiver.wait_for(pauses, within=120.0)
            print(f"\n{pauses} pauses made in {made_in:.1f} s, all received after "
                  f"{time.monotonic() - started:.1f} s")
            await anyio.sleep(1.0)  # nothing more may arrive
    ids = Counter(request.id for request in receiver.received)
    assert len(receiver.received) == pauses and len(ids) == pauses
    assert receiver.concurrent_duplicates == 0
    assert {request.payload["data"]["pause_id"] for request in receiver.received} == set(made)


async def test_expiring_and_expired_are_sent_once_per_pause_across_two_workers(
    store_url: str, tmp_path: Path
) -> None:
    pauses, ttl = 4, 5.0
    with receiving() as receiver:
        options = [
            "webhook_agents:short_lived",
            "--sweep-interval", "0.2",
            *_hook(receiver, "pause.expiring", "pause.expired"),
        ]
        env = _env(SYMFONIC_TEST_PAUSE_TTL=str(ttl))
        with (
            serving(store_url, tmp_path / "a.log", *options, env=env) as a,
            serving(store_url, tmp_path / "b.log", *options, env=env),
        ):
            async with httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a:
                made = [await _pause(on_a) for _ in range(pauses)]
            await receiver.wait_for(2 * pauses, within=ttl + 3.0)
            await anyio.sleep(1.5)  # more sweeps on both workers: nothing more may arrive
    sent = Counter((r.payload["data"]["pause_id"], r.type) for r in receiver.received)
    assert sent == Counter(
        {(pause_id, event): 1 for pause_id in made for event in ("pause.expiring", "pause.expired")}
    )
    for request in receiver.of_type("pause.expiring"):
        payload = request.payload
        assert payload["timestamp"] < payload["data"]["expires_at"]
