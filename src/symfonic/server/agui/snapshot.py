"""A thread's conversation as AG-UI messages for `MESSAGES_SNAPSHOT`: its committed history and
the turn an open interrupt paused, with ids stable across snapshots.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from symfonic.capabilities.human.turnstate import with_proposed_call
from symfonic.core.contracts.readdressing import ReaddressKind
from symfonic.core.contracts.store import PauseRecord, Store
from symfonic.core.contracts.types import PauseState
from symfonic.core.messages import message_of, text_of

OPEN = (PauseState.PENDING, PauseState.CLAIMED)


async def thread_bodies(store: Store, session_id: str) -> list[Mapping[str, Any]]:
    """The stored bodies of the thread's messages, the paused turn's included."""
    session = await store.get_session(session_id)
    if session is None:
        return []
    bodies: list[Mapping[str, Any]] = list(await store.history(session_id, session.revision))
    paused = await store.open_pause(session_id)
    if paused is not None and paused.state in OPEN:
        checkpoint = await store.load_checkpoint(paused.pause_id)
        if checkpoint is not None:
            turn = [m for m in checkpoint.body.get("messages") or () if isinstance(m, Mapping)]
            bodies += with_proposed_call(turn, checkpoint.body)
    return bodies


def _tool_calls(body: Mapping[str, Any]) -> list[ToolCall] | None:
    calls = [
        ToolCall(
            id=str(call["id"]),
            type="function",
            function=FunctionCall(name=str(call["name"]), arguments=json.dumps(call.get("args"))),
        )
        for call in body.get("tool_calls") or ()
        if isinstance(call, Mapping)
    ]
    return calls or None


def agui_message(thread_id: str, index: int, body: Mapping[str, Any]) -> Message | None:
    """One stored message as AG-UI's; a role AG-UI has no place for is left out."""
    message_id = f"{thread_id}.{index}"
    text = text_of(message_of(body))
    role = body.get("role")
    if role == "human":
        return UserMessage(id=message_id, role="user", content=text)
    if role == "ai":
        return AssistantMessage(
            id=message_id, role="assistant", content=text or None, tool_calls=_tool_calls(body)
        )
    if role == "tool":
        return ToolMessage(
            id=message_id, role="tool", content=text, tool_call_id=str(body["tool_call_id"])
        )
    if role == "system":
        return SystemMessage(id=message_id, role="system", content=text)
    return None


def agui_messages(thread_id: str, bodies: Iterable[Mapping[str, Any]]) -> list[Message]:
    out = (agui_message(thread_id, i, body) for i, body in enumerate(bodies))
    return [message for message in out if message is not None]


async def thread_messages(store: Store, session_id: str) -> list[Message]:
    """The thread's conversation as AG-UI messages."""
    return agui_messages(session_id, await thread_bodies(store, session_id))


def answered_note(pause: PauseRecord) -> str:
    """Who answered a pause and how, in words, for a person whose answer came too late."""
    who = pause.answered_by or "someone else"
    how = _how(pause)
    return f"This was already answered by {who}: {how}. Your answer was not used."


def handed_note(pause: PauseRecord) -> str:
    """Why a person's answer to a pause handed to another audience was not used, in words."""
    done = pause.readdressed
    assert done is not None, "only a re-addressed pause is handed over"
    previous = done.previous or "you"
    if done.kind is ReaddressKind.ESCALATED:
        why = f"nobody answered it in time, so it went from {previous} to {done.audience}"
    else:
        why = f"{done.by or 'an operator'} handed it from {previous} to {done.audience}"
        why += f" ({done.reason})" if done.reason else ""
    return f"This question is no longer yours to answer: {why}. Your answer was not used."


def _how(pause: PauseRecord) -> str:
    answer = pause.answer
    if pause.answer_status in ("cancelled", "declined"):
        return "they declined to answer"
    if isinstance(answer, Mapping) and "decision" in answer:
        decision = answer["decision"]
        if decision == "approve":
            return "they approved it"
        if decision == "edit":
            return f"they approved it with these arguments: {json.dumps(answer.get('args'))}"
        if decision == "reject":
            reason = answer.get("reason")
            return f"they rejected it ({reason})" if reason else "they rejected it"
    return f"they answered {json.dumps(answer)}"
