"""Background runs across workers: two real ``symfonic serve`` processes on one database.

A turn started in the background on worker A runs with nobody listening; a
client that connects to worker B afterwards gets its events in full. A resume
started in the background on A, whose client leaves at once, still runs to its
end, its payment sent once, and B follows it live to ``response.complete``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from feed_support import FeedReader
from http_support import Frame, frames
from serve_support import ALICE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MESSAGE = "Pay alice 42 EUR for the design work"


async def ended(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            run = (await client.get(f"/v1/runs/{run_id}")).json()
            if run["state"] != "running":
                return dict(run)
            await anyio.sleep(0.05)


async def followed(client: httpx.AsyncClient, url: str) -> list[Frame]:
    """A run's events, followed live until its terminal event."""
    seen: list[Frame] = []
    async with client.stream("GET", url) as response:
        assert response.status_code == 200
        reader = FeedReader(response)
        while not seen or seen[-1].event not in {"response.complete", "turn.paused", "error"}:
            seen.append(await reader.next(wait=10))
    return seen


async def test_background_runs_started_on_one_worker_are_replayed_and_followed_on_another(
    store_url: str, tmp_path: Path
) -> None:
    with serving(store_url, tmp_path / "a.log") as a, serving(store_url, tmp_path / "b.log") as b:
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=10) as on_b,
        ):
            session_id = (await on_a.post("/v1/sessions", json={})).json()["session_id"]
            turn = await on_a.post(
                f"/v1/sessions/{session_id}/turns", json={"message": MESSAGE, "background": True}
            )
            assert turn.status_code == 202, turn.text
            started = turn.json()
            run = await ended(on_b, started["run_id"])
            assert run["state"] == "paused"
            replay = await on_b.get(started["events_url"])
            events = frames(replay.text)
            assert events[0].event == "turn.started"
            assert events[0].data["run_id"] == started["run_id"]
            assert events[-1].event == "turn.paused"
            assert [int(f.id) for f in events] == list(range(1, len(events) + 1))
            token = events[-1].data["token"]

            # The resume's client leaves as soon as it has its 202.
            async with httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as gone:
                resume = await gone.post(
                    "/v1/resume",
                    json={"token": token, "answer": {"decision": "approve"}, "background": True},
                )
            assert resume.status_code == 202, resume.text
            resumed = await followed(on_b, resume.json()["events_url"])
            assert resumed[0].event == "turn.started" and resumed[0].data["resumed"] is True
            assert resumed[-1].event == "response.complete"
            assert (await ended(on_b, resume.json()["run_id"]))["state"] == "complete"
            session = (await on_b.get(f"/v1/sessions/{session_id}")).json()
    payments = [
        m for m in session["messages"] if m["role"] == "tool" and "sent:" in str(m["content"])
    ]
    assert len(payments) == 1, session["messages"]
