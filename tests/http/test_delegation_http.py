"""A delegated pause over the native API: listed once, under the parent, with the delegate named.

The delegate's own session shows its parent, the delegate's own pause is never
listed and its token is refused with the usual error envelope, and the parent's
token answers both through ``POST /v1/resume``.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from http_support import JSON, frames, serve
from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply

pytestmark = pytest.mark.anyio


def _agents(store_url: str) -> tuple[SymfonicAgent, list[int]]:
    charged: list[int] = []

    def charge(amount: int) -> str:
        """Charge an amount."""
        charged.append(amount)
        return f"charged {amount}"

    def child_model(messages: list[BaseMessage]) -> AIMessage:
        told = [m for m in current_turn(messages) if m.type == "tool"]
        return reply(f"billing: {told[-1].content}") if told else calls(
            ("charge", {"amount": 5}, "c1")
        )

    def parent_model(messages: list[BaseMessage]) -> AIMessage:
        told = [m for m in current_turn(messages) if m.type == "tool"]
        return reply(f"front: {told[-1].content}") if told else calls(
            ("billing", {"task": "charge 5"}, "d1")
        )

    billing = SymfonicAgent(
        name="billing",
        model=ScriptedChatModel(respond=child_model),
        tools=[charge],
        approval={"charge"},
        store=store_url,
    )
    front = SymfonicAgent(
        name="front",
        model=ScriptedChatModel(respond=parent_model),
        delegates=[billing],
        store=store_url,
    )
    return front, charged


async def test_the_delegated_pause_is_listed_once_and_answered_with_the_parents_token(
    store_url: str,
) -> None:
    front, charged = _agents(store_url)
    async with serve(front) as client:
        session = (await client.post("/v1/sessions", json={})).json()["session_id"]
        turn = await client.post(f"/v1/sessions/{session}/turns", json={"message": "charge"})
        paused = frames(turn.text)[-1]
        assert paused.event == "turn.paused" and paused.data["sub_agent"] == "billing"

        listed = (await client.get("/v1/pauses")).json()["pauses"]
        assert [(p["pause_id"], p["session_id"], p["agent"], p["sub_agent"]) for p in listed] == [
            (paused.data["pause_id"], session, "front", "billing")
        ]
        row = await front.store.get_pause(paused.data["pause_id"])
        assert row is not None and row.delegated_pause_id is not None
        child = await front.store.get_pause(row.delegated_pause_id)
        assert child is not None

        view = (await client.get(f"/v1/sessions/{child.session_id}")).json()
        assert view["parent_session_id"] == session and view["agent"] == "billing"
        assert view["status"] == "paused" and view["pending_pause"]["token"] is None
        parent_view = (await client.get(f"/v1/sessions/{session}")).json()
        assert parent_view["parent_session_id"] is None
        assert parent_view["pending_pause"]["sub_agent"] == "billing"

        child_token = front.settlement.signer.mint(child.pause_id)
        refused = await client.post(
            "/v1/resume", json={"token": child_token, "answer": {"decision": "approve"}}
        )
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "pause_not_found"
        assert charged == []

        body = {"token": paused.data["pause_token"], "answer": {"decision": "approve"}}
        done = await client.post("/v1/resume", json=body, headers=JSON)
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "complete"
        assert done.json()["answer"] == "front: billing: charged 5"
        assert charged == [5]
        assert (await client.get("/v1/pauses")).json()["pauses"] == []
        assert (await client.get(f"/v1/sessions/{child.session_id}")).json()["revision"] == 1
