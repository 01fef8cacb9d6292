"""A follower hears of what was kept while its worker's watch of the store was being set up.

A worker watches the store only while something there is followed or running,
so a worker idle between runs sets the watch up again for each one. What is
kept before the watch listens is announced to nobody; once it listens, every
follower looks again, so the stream ends when the run does instead of at the
follower's next periodic look.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
import pytest

from http_support import KEYS, auth, client_of, frames, new_session, payment_agent
from symfonic.agent.fastapi.app import create_app
from symfonic.agent.service import runs

pytestmark = pytest.mark.anyio

ALICE = auth("alice")


async def slow_pay(amount: int) -> str:
    """Pay an amount."""
    await anyio.sleep(0.2)  # the follower is waiting when the run ends
    return f"paid {amount}"


async def test_what_was_kept_before_the_watch_listened_reaches_the_follower(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "RECHECK_SECONDS", 60.0)  # a missed event would wait this long
    agent = payment_agent(store_url, tool=slow_pay, approval=())
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with app.router.lifespan_context(app), client_of(app) as client:
        store = app.state.symfonic.runs._host.store
        watch = store.watch_run_events

        async def listening_late() -> AsyncGenerator[list[str], None]:
            await anyio.sleep(0.6)  # a slow LISTEN: the run has ended by then
            async with aclosing(watch()) as batches:
                async for batch in batches:
                    yield batch

        monkeypatch.setattr(store, "watch_run_events", listening_late)
        session_id = await new_session(client, **ALICE)
        with anyio.fail_after(5):
            started = await client.post(
                f"/v1/sessions/{session_id}/turns",
                json={"message": "pay 5", "background": True},
                headers=ALICE,
            )
            assert started.status_code == 202, started.text
            followed = await client.get(started.json()["events_url"], headers=ALICE)
    assert [f.event for f in frames(followed.text)][-1] == "response.complete"
