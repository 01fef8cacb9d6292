"""Rebuilding a paused turn's messages, with the answer folded in.

From the checkpoint, and only from the checkpoint, so a worker that never saw the pause
can continue the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from symfonic.capabilities.human.turnstate import ResumeOutcome
from symfonic.core.contracts.errors import InteractionConfigurationError
from symfonic.core.contracts.types import Answer
from symfonic.core.messages import MessageBody, message_of

__all__ = ["NOT_DISPATCHED", "InteractionConfigurationError", "rehydrate"]

NOT_DISPATCHED = (
    "not dispatched: this call was in a round that stopped to ask a person, and it "
    "did not run; call it again if it is still needed"
)


def _message(body: MessageBody) -> BaseMessage:
    return message_of(body)


def _call_names(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """Each call id of the transcript, with the name of the tool the model called."""
    return {
        str(call["id"]): str(call["name"])
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    }


def _reserved_call_ids(messages: Sequence[BaseMessage]) -> tuple[str, ...]:
    """The call ids of the paused round still unanswered: the tool calls of its last
    assistant message, less those a delegate already answered before the round stopped."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            answered = {
                str(m.tool_call_id) for m in messages[index + 1 :] if isinstance(m, ToolMessage)
            }
            return tuple(
                str(call["id"]) for call in message.tool_calls if str(call["id"]) not in answered
            )
    return ()


def _answer_text(response: Answer) -> str:
    if isinstance(response, str):
        return response
    return json.dumps(response, sort_keys=True, default=str)


def rehydrate(outcome: ResumeOutcome) -> tuple[BaseMessage, ...]:
    """The paused turn's messages, with the answer folded in as its observation.

    The answer arrives as a ``tool`` message on the reserved call id, the call
    the paused round was waiting for: anything else would leave the assistant's
    tool call unanswered, which every strict provider rejects. It carries the
    tool's name, as the kernel's own observations do.
    """
    checkpoint = outcome.turn
    if checkpoint is None:
        raise InteractionConfigurationError(
            "this resume has no recorded turn state to rebuild from; a "
            "continuation assembled from nothing would answer the person's "
            "question into a conversation the model has never seen"
        )
    messages = [_message(dict(body)) for body in checkpoint.messages]
    reserved = _reserved_call_ids(messages)
    answered = outcome.tool_call_id or outcome.interrupt_id
    names = _call_names(messages)
    messages.append(
        ToolMessage(
            content=_answer_text(outcome.response),
            tool_call_id=answered,
            name=names.get(answered),
        )
    )
    # Every other call the round reserved gets an observation too. The pause
    # stopped the whole round at the first registered interaction, so the rest
    # never ran -- and a provider handed an assistant message with three tool
    # calls and one tool result rejects the request outright.
    messages.extend(
        ToolMessage(content=NOT_DISPATCHED, tool_call_id=call_id, name=names.get(call_id))
        for call_id in reserved
        if call_id and call_id != answered
    )
    return tuple(messages)
