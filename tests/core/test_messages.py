"""Stored bodies come back as the very messages langchain-core's validation builds.

Bodies in the shape ``body_of`` writes are assembled without running pydantic; a
provider, a callback or ``model_dump`` must not be able to tell the difference,
and no two messages may share a mutable field. Every other shape still goes
through langchain-core's validation, with its coercions and its errors.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from pydantic import ValidationError

from symfonic.core.messages import _assembled, body_of, message_of, messages_of


def validated(body: dict[str, Any]) -> BaseMessage:
    """What langchain-core's own constructors make of a body."""
    role, content = body["role"], body.get("content", "")
    if role == "human":
        return HumanMessage(content=content)
    if role == "system":
        return SystemMessage(content=content)
    if role == "ai":
        calls = [
            {"id": c["id"], "name": c["name"], "args": dict(c.get("args") or {})}
            for c in body.get("tool_calls") or ()
        ]
        return AIMessage(content=content, tool_calls=calls)
    return ToolMessage(
        content=content,
        tool_call_id=body["tool_call_id"],
        name=body.get("name"),
        status=body.get("status", "success"),
    )


def state(message: BaseMessage) -> tuple[Any, ...]:
    """Everything pydantic counts as the instance's state (what it pickles), and the class."""
    return type(message), message.__getstate__()


CANONICAL = [
    {"role": "human", "content": "pay invoice 4711"},
    {"role": "system", "content": "you are careful"},
    {"role": "ai", "content": "done"},
    {"role": "ai", "content": "", "tool_calls": [
        {"id": "call_1", "name": "send_payment", "args": {"amount": 5, "to": {"iban": "X"}}},
        {"id": None, "name": "lookup", "args": {}},
    ]},
    {"role": "tool", "content": "sent", "tool_call_id": "call_1", "name": "send_payment"},
    {"role": "tool", "content": "failed", "tool_call_id": "call_1", "status": "error"},
    {"role": "human", "content": ""},
]


@pytest.mark.parametrize("body", CANONICAL, ids=lambda b: b["role"])
def test_a_stored_body_becomes_the_message_validation_would_build(body: dict[str, Any]) -> None:
    message = message_of(body)
    expected = validated(body)
    assert state(message) == state(expected)
    assert message == expected
    assert message.model_dump() == expected.model_dump()
    assert message.model_dump_json() == expected.model_dump_json()
    assert body_of(message) == body_of(expected)


def test_messages_from_equal_bodies_share_no_mutable_field() -> None:
    body = CANONICAL[3]
    first, second = messages_of([body, body])
    assert isinstance(first, AIMessage) and isinstance(second, AIMessage)
    first.additional_kwargs["seen"] = True
    first.response_metadata["model"] = "x"
    first.tool_calls[0]["args"]["amount"] = 500
    first.tool_calls.append({"id": "c", "name": "n", "args": {}, "type": "tool_call"})
    assert second.additional_kwargs == {} and second.response_metadata == {}
    assert second.tool_calls[0]["args"]["amount"] == 5 and len(second.tool_calls) == 2
    assert body["tool_calls"][0]["args"]["amount"] == 5
    # Nor with the next message built: the defaults it starts from are untouched.
    assert state(message_of(body)) == state(validated(body))


def test_assembled_messages_serialize_and_copy_as_langchain_core_does() -> None:
    messages = messages_of(CANONICAL)
    expected = [validated(b) for b in CANONICAL]
    assert [dumpd(m) for m in messages] == [dumpd(m) for m in expected]
    assert messages_to_dict(messages) == messages_to_dict(expected)
    assert [m.model_copy(update={"id": "m1"}) for m in messages] == [
        m.model_copy(update={"id": "m1"}) for m in expected
    ]


def test_other_shapes_still_go_through_langchain_validation() -> None:
    blocks = [{"type": "text", "text": "look"}, {"type": "image", "url": "https://x/y.png"}]
    multimodal = {"role": "human", "content": blocks}
    assert state(message_of(multimodal)) == state(HumanMessage(content=blocks))
    # langchain-core coerces a tool result and a call id to text ...
    coerced = message_of({"role": "tool", "content": 42, "tool_call_id": 7})
    assert isinstance(coerced, ToolMessage)
    assert (coerced.content, coerced.tool_call_id) == ("42", "7")
    # ... and rejects what it cannot use, as it always did.
    with pytest.raises(ValidationError):
        message_of({"role": "ai", "content": "", "tool_calls": [{"id": "c", "name": 3}]})
    with pytest.raises(ValidationError):
        message_of({"role": "tool", "content": "x", "tool_call_id": "c", "status": "maybe"})
    with pytest.raises(KeyError):
        message_of({"role": "ai", "content": "", "tool_calls": [{"name": "no_id"}]})
    with pytest.raises(ValueError, match="unknown role"):
        message_of({"role": "robot", "content": "beep"})


texts = st.text(max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
calls = st.fixed_dictionaries(
    {
        "id": st.none() | texts,
        "name": texts,
        "args": st.dictionaries(texts, json_values, max_size=3),
    }
)
bodies = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["human", "system"]), "content": texts}),
    st.fixed_dictionaries(
        {"role": st.just("ai"), "content": texts, "tool_calls": st.lists(calls, max_size=3)}
    ),
    st.fixed_dictionaries(
        {"role": st.just("tool"), "content": texts, "tool_call_id": texts},
        optional={"name": texts, "status": st.sampled_from(["success", "error"])},
    ),
)


@given(bodies)
def test_every_body_of_the_stored_shape_assembles_as_validation_would(
    body: dict[str, Any],
) -> None:
    assert state(message_of(body)) == state(validated(body))


@pytest.mark.parametrize(
    "body",
    [
        {"role": "human", "content": "hi"},
        {"role": "system", "content": "be brief"},
        {"role": "ai", "content": "", "tool_calls": [{"id": "c1", "name": "pay", "args": {}}]},
        {"role": "ai", "content": "done"},
        {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "pay"},
    ],
)
def test_the_installed_langchain_core_takes_the_assembly_path(body: dict[str, Any]) -> None:
    # A langchain-core whose messages gained a mutable field would silently fall
    # back to validation everywhere: correct, but twice as slow per message.
    assert _assembled(body) is not None
