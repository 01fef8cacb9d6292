"""The one place langchain-core messages become stored bodies and back; a body keeps only what a
provider needs to be sent the message again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import BaseModel

MessageBody = dict[str, Any]


def body_of(message: BaseMessage) -> MessageBody:
    """The stored body of one message."""
    body: MessageBody = {"role": message.type, "content": message.content}
    if isinstance(message, AIMessage) and message.tool_calls:
        body["tool_calls"] = [
            {"id": call["id"], "name": call["name"], "args": call["args"]}
            for call in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        body["tool_call_id"] = message.tool_call_id
        if message.name:
            body["name"] = message.name
        if message.status != "success":
            body["status"] = message.status
    return body


def message_of(body: Mapping[str, Any]) -> BaseMessage:
    """The message a stored body describes; an unknown role is a corrupt body.

    A body of the shape `body_of` writes (text content, well-typed tool
    calls) is assembled from checks made here; any other shape goes through
    langchain-core's validation, which coerces what it can and rejects the rest.
    """
    message = _assembled(body)
    return _validated(body) if message is None else message


def _validated(body: Mapping[str, Any]) -> BaseMessage:
    role = body.get("role")
    content = body.get("content", "")
    if role == "human":
        return HumanMessage(content=content)
    if role == "system":
        return SystemMessage(content=content)
    if role == "ai":
        calls = [
            {
                "id": c["id"],
                "name": c["name"],
                "args": dict(c.get("args") or {}),
                "type": "tool_call",
            }
            for c in body.get("tool_calls") or ()
        ]
        return AIMessage(content=content, tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            content=content,
            tool_call_id=body["tool_call_id"],
            name=body.get("name"),
            status=body.get("status", "success"),
        )
    raise ValueError(f"a stored message has an unknown role {role!r}")


# The slots pydantic keeps an instance's state in, set through their own
# descriptors: ``object.__setattr__`` would look each one up by name first.
_SET_DICT = BaseModel.__dict__["__dict__"].__set__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__

# The mutable fields a message's validation fills with fresh empty containers:
# two dicts on every message, two lists more on an AIMessage. A langchain-core
# whose messages have others gets no prototype, and every body is validated.
_FRESH_DICTS = ("additional_kwargs", "response_metadata")
_FRESH_LISTS = ("tool_calls", "invalid_tool_calls")


class _Prototype:
    """The state a validated, empty message of one class starts from.

    `build` makes the message validation would make of fields that
    `_assembled` has already type-checked: the sample's defaults, the
    given fields, fresh empty containers where pydantic's factories make them,
    and ``fields_set`` as validation records it (the fields `_validated`
    passes for the role). The state is set the way pydantic's own
    ``model_construct`` sets it, through the slots' descriptors. Why messages
    are built this way at all is in docs/internals.md.
    """

    def __init__(
        self, cls: type[BaseMessage], sample: BaseMessage, fields_set: set[str], *, lists: bool
    ) -> None:
        self._cls = cls
        self._defaults = dict(sample.__dict__)
        self._lists = lists
        self._fields_set = frozenset(fields_set)

    def build(self, content: str, fields: dict[str, Any] | None = None) -> BaseMessage:
        """The message of ``content`` and, past the defaults, ``fields``."""
        state = self._defaults.copy()
        state["content"] = content
        state["additional_kwargs"] = {}
        state["response_metadata"] = {}
        if self._lists:
            state["tool_calls"] = []
            state["invalid_tool_calls"] = []
        if fields is not None:
            state.update(fields)
        message = object.__new__(self._cls)
        _SET_DICT(message, state)
        _SET_FIELDS_SET(message, set(self._fields_set))
        _SET_EXTRA(message, {})
        _SET_PRIVATE(message, None)
        return message


def _prototype(cls: type[BaseMessage], fields_set: set[str], **required: Any) -> _Prototype | None:
    """A prototype, or ``None`` where copying state would not equal validating."""
    sample = cls(content="", **required)
    state, extra = sample.__dict__, sample.__pydantic_extra__
    mutable = {n: type(v) for n, v in state.items() if isinstance(v, dict | list)}
    lists = _FRESH_LISTS if _FRESH_LISTS[0] in state else ()
    plain = (
        cls.__pydantic_post_init__ is None
        and sample.__pydantic_private__ is None
        and type(extra) is dict
        and not extra
        and mutable == dict.fromkeys(_FRESH_DICTS, dict) | dict.fromkeys(lists, list)
        and not any(state[n] for n in mutable)
    )
    return _Prototype(cls, sample, fields_set, lists=bool(lists)) if plain else None


_HUMAN = _prototype(HumanMessage, {"content"})
_SYSTEM = _prototype(SystemMessage, {"content"})
_AI = _prototype(AIMessage, {"content", "tool_calls"})
_TOOL = _prototype(ToolMessage, {"content", "tool_call_id", "name", "status"}, tool_call_id="")


def _assembled(body: Mapping[str, Any]) -> BaseMessage | None:
    """The message of a body in `body_of`'s shape, or ``None`` for any other.

    Every field is type-checked here exactly as strictly as validation would
    accept it unchanged; anything validation would coerce or refuse returns
    ``None``, so that it goes through validation after all.
    """
    role = body.get("role")
    content = body.get("content", "")
    if type(content) is not str:
        return None
    if role == "human":
        return None if _HUMAN is None else _HUMAN.build(content)
    if role == "ai":
        if _AI is None:
            return None
        stored = body.get("tool_calls")
        if not stored:
            return _AI.build(content)
        calls = _tool_calls(stored)
        return None if calls is None else _AI.build(content, {"tool_calls": calls})
    if role == "tool":
        call_id, name = body.get("tool_call_id"), body.get("name")
        status = body.get("status", "success")
        if _TOOL is None or type(call_id) is not str:
            return None
        if not (name is None or type(name) is str) or status not in ("success", "error"):
            return None
        return _TOOL.build(content, {"tool_call_id": call_id, "name": name, "status": status})
    if role == "system":
        return None if _SYSTEM is None else _SYSTEM.build(content)
    return None


def _tool_calls(stored: Any) -> list[dict[str, Any]] | None:
    """Tool calls as langchain-core's validator leaves them, or ``None`` if ill-typed."""
    if type(stored) is not list:
        return None
    calls = []
    for call in stored:
        if type(call) is not dict or "id" not in call or "name" not in call:
            return None
        call_id, name, args = call["id"], call["name"], call.get("args") or {}
        if not (call_id is None or type(call_id) is str) or type(name) is not str:
            return None
        if type(args) is not dict or not all(type(key) is str for key in args):
            return None
        calls.append({"name": name, "args": dict(args), "id": call_id, "type": "tool_call"})
    return calls


def bodies_of(messages: Iterable[BaseMessage]) -> list[MessageBody]:
    return [body_of(m) for m in messages]


def messages_of(bodies: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    # message_of's two steps without a call of its own per message (docs/internals.md).
    messages = []
    for body in bodies:
        message = _assembled(body)
        messages.append(_validated(body) if message is None else message)
    return messages


def text_of(message: BaseMessage) -> str:
    """The plain text of a message, whatever shape its content has."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)
