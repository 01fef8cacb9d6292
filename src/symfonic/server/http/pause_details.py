"""What a person needs beside a pause to answer it, from its checkpoint: the call it gates and
the last messages of its turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from symfonic.capabilities.human.turnstate import with_proposed_call
from symfonic.core.contracts.pause_views import MessageView, PauseView
from symfonic.core.contracts.store import Store

RECENT_MESSAGES = 4


def _call_of(messages: Sequence[Mapping[str, Any]], call_id: str) -> Mapping[str, Any] | None:
    for message in reversed(messages):
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id") == call_id:
                return call
    return None


def with_details(view: PauseView, checkpoint_body: Mapping[str, Any] | None) -> PauseView:
    """``view`` with the gated call and recent messages read from its checkpoint body."""
    if checkpoint_body is None:
        return view
    stored = [m for m in checkpoint_body.get("messages") or () if isinstance(m, Mapping)]
    # An edit that is a new proposal is what an approver approves: shown in place.
    messages = with_proposed_call(stored, checkpoint_body)
    call = _call_of(messages, view.tool_call_id)
    args = call.get("args") if call is not None else None
    return view.model_copy(
        update={
            "tool_name": call.get("name") if call is not None else None,
            "tool_args": dict(args) if isinstance(args, Mapping) else None,
            "recent_messages": [MessageView.model_validate(m) for m in messages[-RECENT_MESSAGES:]],
        }
    )


async def detailed(store: Store, views: Sequence[PauseView]) -> list[PauseView]:
    """Each view with its details; one checkpoint read per pending pause."""
    out = []
    for view in views:
        checkpoint = await store.load_checkpoint(view.pause_id) if view.token else None
        out.append(with_details(view, checkpoint.body if checkpoint is not None else None))
    return out
