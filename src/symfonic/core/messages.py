"""The one place langchain-core messages become stored bodies and back.

A body is a small JSON object: only what a provider needs to be sent the
message again (role, content, tool calls, the call id a tool message answers).
Provider metadata is dropped on purpose, so a checkpoint's size is the size of
the conversation, not of the responses' bookkeeping.
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
    """The message a stored body describes; an unknown role is a corrupt body."""
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


def bodies_of(messages: Iterable[BaseMessage]) -> list[MessageBody]:
    return [body_of(m) for m in messages]


def messages_of(bodies: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    return [message_of(b) for b in bodies]


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
