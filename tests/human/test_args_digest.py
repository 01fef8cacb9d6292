"""What exactly was approved: ``args_digest``, on SQLite and PostgreSQL.

Every approval pause carries the SHA-256 of its tool and arguments as RFC 8785
JSON, in every view: the caller's result, the row, the stream, the listing, the
webhook body and AG-UI's interrupt. An answer may carry it back; one that is
not the pause's is refused with 409 ``stale_question`` before anything is
claimed, and the token still answers. An edit records both digests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from http_support import JSON, frames, serve
from symfonic import StaleQuestion, SymfonicAgent
from symfonic.core.contracts.types import PauseState, TurnPausedEvent
from symfonic.core.contracts.webhooks import WebhookEventType
from symfonic.server.agui.interrupts import interrupt_of
from symfonic.server.service.webhook_payloads import pause_data
from symfonic.testing import ScriptedChatModel, calls, reply

pytestmark = pytest.mark.anyio

PAYMENT = {"to_iban": "DE02120300000000202051", "currency": "EUR", "amount": 15}
EDITED = {"to_iban": "DE02120300000000202051", "currency": "EUR", "amount": 4}
STALE = "0" * 64
HEADERS = {"Authorization": "Bearer key-alice"}


def jcs_digest(tool: str, args: dict[str, Any]) -> str:
    """For ASCII text and small integers, RFC 8785 is sorted keys without spaces."""
    text = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def send_payment(to_iban: str, currency: str, amount: int) -> str:
    """Send a payment."""
    return f"sent {amount} {currency} to {to_iban}"


def _agent(store_url: str) -> SymfonicAgent:
    return SymfonicAgent(
        model=ScriptedChatModel.from_script(
            [calls(("send_payment", PAYMENT, "p1")), reply("done")]
        ),
        tools=[send_payment],
        approval={"send_payment"},
        store=store_url,
    )


async def test_an_approval_carries_the_digest_of_its_call_and_a_question_none(
    store_url: str,
) -> None:
    asks = SymfonicAgent(
        model=ScriptedChatModel.from_script([calls(("ask_human", {"question": "Why?"}, "q"))]),
        store=store_url,
    )
    async with _agent(store_url) as agent, asks:
        events = [e async for e in agent.stream("pay", principal="alice")]
        [paused] = [e for e in events if isinstance(e, TurnPausedEvent)]
        expected = jcs_digest("send_payment", PAYMENT)
        assert paused.args_digest == expected
        row = await agent.store.get_pause(paused.pause_id)
        assert row is not None and row.args_digest == expected
        metadata = interrupt_of(paused).metadata
        assert metadata is not None and metadata["symfonic"]["argsDigest"] == expected
        body = pause_data(row, WebhookEventType.PAUSE_CREATED, inbox_url=None, token=None)
        assert body.model_dump(mode="json")["args_digest"] == expected
        question = await asks.run("ask", principal="alice")
        assert question.pause is not None and question.pause.args_digest is None


async def test_a_stale_digest_is_refused_and_the_token_still_answers(store_url: str) -> None:
    async with _agent(store_url) as agent:
        paused = await agent.run("pay", principal="alice")
        assert paused.pause is not None
        with pytest.raises(StaleQuestion) as refused:
            await agent.resume(
                paused.pause.token, {"decision": "approve"}, "alice", args_digest=STALE
            )
        assert refused.value.code == "stale_question" and STALE in refused.value.message
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.PENDING and row.answered_by is None
        done = await agent.resume(
            paused.pause.token, {"decision": "approve"}, "alice",
            args_digest=paused.pause.args_digest,
        )
        assert done.status == "complete"


async def test_over_http_the_listing_shows_the_digest_and_a_stale_one_gets_409(
    store_url: str,
) -> None:
    async with serve(_agent(store_url), api_keys="alice=key-alice") as client:
        session = (await client.post("/v1/sessions", json={}, headers=HEADERS)).json()
        turn = await client.post(
            f"/v1/sessions/{session['session_id']}/turns", json={"message": "pay"},
            headers=HEADERS,
        )
        paused = frames(turn.text)[-1].data
        expected = jcs_digest("send_payment", PAYMENT)
        assert paused["args_digest"] == expected
        [listed] = (await client.get("/v1/pauses", headers=HEADERS)).json()["pauses"]
        assert listed["args_digest"] == expected
        body = {"token": paused["pause_token"], "answer": {"decision": "edit", "args": EDITED}}
        stale = await client.post(
            "/v1/resume", json={**body, "args_digest": STALE}, headers={**HEADERS, **JSON}
        )
        assert stale.status_code == 409
        assert stale.json()["error"]["code"] == "stale_question"
        [still] = (await client.get("/v1/pauses", headers=HEADERS)).json()["pauses"]
        assert still["state"] == "pending" and still["token"]
        done = await client.post(
            "/v1/resume", json={**body, "args_digest": expected}, headers={**HEADERS, **JSON}
        )
        assert done.status_code == 200 and done.json()["status"] == "complete"
        [answered] = (
            await client.get("/v1/pauses", params={"state": "published"}, headers=HEADERS)
        ).json()["pauses"]
        # The edit records both: what was asked, and the call that ran.
        assert answered["args_digest"] == expected
        assert answered["edited_args_digest"] == jcs_digest("send_payment", EDITED)


async def test_an_approval_records_no_edited_digest(store_url: str) -> None:
    async with _agent(store_url) as agent:
        paused = await agent.run("pay", principal="alice")
        assert paused.pause is not None
        await agent.resume(paused.pause.token, {"decision": "approve"}, "alice")
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.edited_args_digest is None
        assert row.args_digest == jcs_digest("send_payment", PAYMENT)
        body = pause_data(row, WebhookEventType.PAUSE_ANSWERED, inbox_url=None, token=None)
        assert body.model_dump(mode="json")["args_digest"] == row.args_digest
