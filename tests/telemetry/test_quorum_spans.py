"""A four-eyes vote in traces and metrics, read from the SDK's in-memory exporters.

Each approval's resume span and its store span (``symfonic.claim``, operation
``vote_pause``) say where the vote stands (``symfonic.approvals`` of
``symfonic.approvals_required``) and how the vote ended: ``voted``, ``replay``
for a principal already counted, ``won`` for the one that completes the quorum.
``symfonic.approvals.counted`` counts each counted approval by decision, and
not a replay.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_support import Recorded, attributes, otel
from symfonic import Principal, SymfonicAgent, needs_approval
from symfonic.core.telemetry import names
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply

pytestmark = pytest.mark.anyio
__all__ = ["otel"]  # the fixture, used by name

ALICE, CAROL, DAVE, ERIN = (
    Principal(name, frozenset({"payments"})) for name in ("alice", "carol", "dave", "erin")
)
APPROVE = {"decision": "approve"}


def _agent(store_url: str) -> SymfonicAgent:
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    def respond(messages: list[Any]) -> Any:
        first = not any(getattr(m, "tool_calls", None) for m in current_turn(messages))
        return calls(("pay", {"amount": 500}, "p1")) if first else reply("done")

    rule = needs_approval(audience="payments", approvers=2)
    return SymfonicAgent(
        name="quorum",
        model=ScriptedChatModel(respond=respond),
        tools=[pay],
        approval={"pay": rule},
        store=store_url,
    )


def _stands(span: ReadableSpan) -> tuple[Any, Any, Any]:
    seen = attributes(span)
    return (
        seen.get(names.CLAIM_RESULT),
        seen.get(names.APPROVALS),
        seen.get(names.APPROVALS_REQUIRED),
    )


async def test_each_vote_says_where_it_stands_and_counted_ones_are_counted(
    store_url: str, otel: Recorded
) -> None:
    def counted(decision: str) -> float:
        labels = {names.AGENT: "quorum", names.APPROVAL_DECISION: decision}
        return otel.total(names.APPROVALS_COUNTED, **labels)

    before = counted("approve"), counted("edit")
    async with _agent(store_url) as agent:
        asked = await agent.run("pay 500", principal=ALICE)
        assert asked.pause is not None
        token = asked.pause.token
        await agent.resume(token, APPROVE, principal=CAROL)
        await agent.resume(token, APPROVE, principal=CAROL)  # a replay
        await agent.resume(token, {"decision": "edit", "args": {"amount": 5}}, principal=DAVE)
        done = await agent.resume(token, APPROVE, principal=ERIN)
        assert done.status == "complete"

    resumes = [_stands(span) for span in otel.named(names.RESUME)]
    assert resumes == [
        ("voted", 1, 2),
        ("replay", 1, 2),
        ("voted", 1, 2),  # the edit: a new proposal, only its editor's approval counts
        ("won", 2, 2),
    ]
    votes = [
        _stands(span)
        for span in otel.named(names.CLAIM)
        if attributes(span).get(names.STORE_OPERATION) == "vote_pause"
    ]
    assert votes == [("voted", 1, 2), ("replay", 1, 2), ("voted", 1, 2), ("won", 2, 2)]
    assert (counted("approve"), counted("edit")) == (before[0] + 2, before[1] + 1)
