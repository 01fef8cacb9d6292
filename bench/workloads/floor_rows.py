"""The rows the floor writes, the same sizes a real pause/resume cycle must commit,
and the three commits every floor splits its cycle into.

The floor is the database doing only what a cycle cannot avoid, so its rows must
be as large as the real ones, or it would be a floor nobody can reach:

* a pause row with the columns an auditable pause needs (who, what, schema, expiry);
* a checkpoint of the in-flight turn in it, ~1.5 KB (the user message and the paused
  round with its tool call, as langchain-core serialises them);
* the turn's four message rows at publish (user, tool call, tool result, answer).
"""

from __future__ import annotations

import json
import uuid
from abc import abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, message_to_dict

from bench.history import FINAL_ANSWER, TOOL_ARGS, TOOL_NAME, TOOL_RESULT, USER_MESSAGE
from bench.workloads.base import Workload

CHECKPOINT_BYTES = 1536
PAUSE_TTL = timedelta(hours=24)
CLAIM_LEASE = timedelta(minutes=5)

RESPONSE_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "decision": {"enum": ["approve", "edit", "reject"]},
            "args": {"type": "object"},
            "reason": {"type": "string"},
        },
        "required": ["decision"],
    }
)
QUERY = f"Approve {TOOL_NAME} with {json.dumps(TOOL_ARGS)}?"
ANSWER = json.dumps({"decision": "approve"})
OUTCOME = json.dumps({"answer": FINAL_ANSWER, "status": "complete"})


def _turn_messages(call_id: str) -> list[dict[str, object]]:
    return [
        message_to_dict(HumanMessage(USER_MESSAGE, id=str(uuid.uuid4()))),
        message_to_dict(
            AIMessage(
                "",
                id=str(uuid.uuid4()),
                tool_calls=[{"name": TOOL_NAME, "args": dict(TOOL_ARGS), "id": call_id}],
            )
        ),
        message_to_dict(ToolMessage(TOOL_RESULT, tool_call_id=call_id, id=str(uuid.uuid4()))),
        message_to_dict(AIMessage(FINAL_ANSWER, id=str(uuid.uuid4()))),
    ]


def checkpoint_body(call_id: str, base_revision: int) -> str:
    """The in-flight turn (user message + paused round), padded to CHECKPOINT_BYTES."""
    body: dict[str, object] = {
        "format_version": 1,
        "base_revision": base_revision,
        "messages": _turn_messages(call_id)[:2],
        "pending_call_ids": [call_id],
    }
    text = json.dumps(body)
    # Pad with the run metadata a kernel keeps (limits, usage, model settings) so
    # the floor commits the size the brief fixes, not whatever our constants total.
    body["run_metadata"] = "m" * max(0, CHECKPOINT_BYTES - len(text) - 20)
    return json.dumps(body)


def history_json(body: dict[str, str]) -> str:
    """A history message as a message row stores it (langchain-core's dict form)."""
    kind = "human" if body["role"] == "human" else "ai"
    return json.dumps({"type": kind, "data": {"content": body["content"], "type": kind}})


def turn_bodies(call_id: str) -> list[str]:
    """The four message rows published at the end of a cycle."""
    return [json.dumps(message) for message in _turn_messages(call_id)]


@dataclass(frozen=True)
class PauseRow:
    pause_id: str
    call_id: str
    created_at: datetime
    expires_at: datetime

    @classmethod
    def new(cls) -> PauseRow:
        now = datetime.now(UTC)
        return cls(uuid.uuid4().hex, f"call_{uuid.uuid4().hex[:24]}", now, now + PAUSE_TTL)


@dataclass
class FloorSession:
    """What the floor keeps in memory about a session: its revision and length."""

    session_id: str
    revision: int
    message_count: int


class Floor(Workload):
    """A floor's cycle as its three commits: pause, then claim and publish.

    A resume is the claim and the publish back to back; they are separate so that
    :mod:`bench.workloads.floor_model` can call a model between them, where a
    runtime's resumed turn does.
    """

    system = "floor"

    @abstractmethod
    async def pause(self, session: str) -> PauseRow:
        """Commit 1: the pause row, its checkpoint in it."""

    @abstractmethod
    async def claim(self, row: PauseRow) -> str:
        """Commit 2: the single-use claim; its id."""

    @abstractmethod
    async def publish(self, session: str, row: PauseRow, claim_id: str) -> None:
        """Commit 3: the revision bumped, the turn's messages, the pause published."""

    async def resume(self, session: str, handle: Any) -> None:
        await self.publish(session, handle, await self.claim(handle))
