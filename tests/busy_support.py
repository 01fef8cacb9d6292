"""A session kept busy by a turn held in its tool, for the tests of ``on_busy``.

The agent's model is a function of the transcript: "hold X" calls the ``hold``
tool, which waits until the test releases X; "pay N" asks for an approval;
"holdpay X" holds, then asks to pay; "twice X" holds X, then holds "second";
anything else is echoed.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from http_support import Frame, auth, frames, new_session
from symfonic import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, call, reply

ALICE, BOB = auth("alice"), auth("bob")


class Holds:
    """The ``hold`` tool: each call is noted, and waits until its note is released."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.cancelled: list[str] = []
        self.entered: dict[str, anyio.Event] = {}
        self.released: dict[str, anyio.Event] = {}

    def _event(self, events: dict[str, anyio.Event], note: str) -> anyio.Event:
        return events.setdefault(note, anyio.Event())

    async def hold(self, note: str) -> str:
        """Hold until released."""
        self.calls.append(note)
        self._event(self.entered, note).set()
        try:
            await self._event(self.released, note).wait()
        except BaseException:
            self.cancelled.append(note)
            raise
        return f"held {note}"

    async def until_cancelled(self, note: str) -> None:
        with anyio.fail_after(5):
            while True:
                if note in self.cancelled:
                    return
                await anyio.sleep(0.01)

    async def until_entered(self, note: str) -> None:
        with anyio.fail_after(5):
            await self._event(self.entered, note).wait()

    def release(self, note: str) -> None:
        self._event(self.released, note).set()


def respond(messages: list[BaseMessage]) -> AIMessage:
    """``hold`` for "hold X" (twice for "twice X"), ``pay`` for "pay N"; else an echo,
    or the tool's answer."""
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    asked = text_of(messages[start])
    answered = [m for m in messages[start:] if isinstance(m, ToolMessage)]
    if asked.startswith("twice") and len(answered) < 2:  # two ungated calls in a row
        return call("hold", {"note": "second" if answered else asked})
    if asked.startswith("holdpay") and len(answered) == 1:
        return call("pay", {"amount": 5})  # held first, then asks to pay
    if answered:
        return reply(f"done: {text_of(answered[-1])}")
    if asked.startswith("hold"):
        return call("hold", {"note": asked})
    if asked.startswith("pay"):
        return call("pay", {"amount": 5})
    return reply(f"echo: {asked}")


def holding_agent(store_url: str, holds: Holds, **options: Any) -> SymfonicAgent:
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    options.setdefault("approval", {"pay"})
    return SymfonicAgent(
        model=ScriptedChatModel(respond=respond),
        tools=[holds.hold, pay],
        store=store_url,
        **options,
    )


async def send(
    client: httpx.AsyncClient, session_id: str, message: str, headers: dict[str, str],
    **fields: Any,
) -> httpx.Response:
    return await client.post(
        f"/v1/sessions/{session_id}/turns", json={"message": message, **fields}, headers=headers
    )


async def queued(
    client: httpx.AsyncClient, session_id: str, message: str, **fields: Any
) -> dict[str, Any]:
    response = await send(client, session_id, message, ALICE, on_busy="enqueue", **fields)
    assert response.status_code == 202, response.text
    return dict(response.json())


async def ended(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    with anyio.fail_after(5):
        while True:
            run = (await client.get(f"/v1/runs/{run_id}", headers=ALICE)).json()
            if run["state"] not in {"queued", "running"}:
                return dict(run)
            await anyio.sleep(0.02)


async def replayed(client: httpx.AsyncClient, run_id: str) -> list[Frame]:
    response = await client.get(f"/v1/runs/{run_id}/events", headers=ALICE)
    assert response.status_code == 200, response.text
    return frames(response.text)


async def said(client: httpx.AsyncClient, session_id: str) -> list[str]:
    """What the person said, in the session's committed history."""
    session = (await client.get(f"/v1/sessions/{session_id}", headers=ALICE)).json()
    return [m["content"] for m in session["messages"] if m["role"] == "human"]


async def busy_session(client: httpx.AsyncClient, holds: Holds) -> tuple[str, str]:
    """A session whose background turn ``hold first`` is held in its tool; (session, run)."""
    session_id = await new_session(client, **ALICE)
    started = await send(client, session_id, "hold first", ALICE, background=True)
    assert started.status_code == 202, started.text
    await holds.until_entered("hold first")
    return session_id, started.json()["run_id"]
