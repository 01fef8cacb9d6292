"""Ordinary tools: bound, called and observed.

A tool that raises becomes an error observation, never a crashed turn, and every call
gets an idempotency key that survives a pause.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools.base import create_schema_from_function
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from symfonic.core.contracts.types import Answer, AnswerStatus, InteractionKind, PendingInteraction

IDEMPOTENCY_PARAMETER = "idempotency_key"

ToolLike = BaseTool | Callable[..., Any]


@runtime_checkable
class Connections(Protocol):
    """Live connections behind some tools (an MCP server's), closed with the agent."""

    async def aclose(self) -> None: ...


def tool_connections(tools: Iterable[Tool]) -> list[Connections]:
    """Each distinct set of connections the tools name as their ``connections``.

    The agent that was handed the tools closes these when it closes, so a user
    who built tools from a server need not close them apart from the agent.
    """
    found: dict[int, Connections] = {}
    for tool in tools:
        owner = getattr(tool.binding, "connections", None)
        if isinstance(owner, Connections):
            found[id(owner)] = owner
    return list(found.values())


def idempotency_key(session_id: str, tool_call_id: str) -> str:
    """Stable across resumes and workers: the same call always gets the same key."""
    return hashlib.sha256(f"{session_id}\x1f{tool_call_id}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Question:
    """What a tool asks a person mid-call, and what it needs to go on once answered.

    ``response_schema`` is the JSON Schema the answer must meet (checked before
    the pause is claimed); ``continuation`` is plain JSON, kept in the checkpoint;
    ``server`` names the MCP server that asked, shown wherever the pause is.
    """

    query: str
    response_schema: dict[str, Any]
    continuation: dict[str, Any]
    kind: InteractionKind = InteractionKind.FORM
    server: str | None = None

    def pending(
        self, tool_call_id: str, tool_name: str, args: dict[str, Any]
    ) -> PendingInteraction:
        """The pause of the call that asked it."""
        return PendingInteraction(
            kind=self.kind,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            args=args,
            query=self.query,
            response_schema=self.response_schema,
            continuation=self.continuation,
            server=self.server,
        )


class ToolAsks(Exception):
    """Raised by a tool that cannot finish its call without a person's answer."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.query)
        self.question = question


@runtime_checkable
class AnswersQuestions(Protocol):
    """A tool that can go on with a call it paused, given the person's answer."""

    async def answered(
        self, continuation: Mapping[str, Any], answer: Answer, status: AnswerStatus, key: str
    ) -> Any:
        """The call's result, shaped as the tool's own call returns it (content and
        artifact, for a ``content_and_artifact`` tool); raises `ToolAsks` when
        it asks again."""
        ...


@dataclass(frozen=True)
class Observation:
    content: str
    ok: bool
    asks: Question | None = None
    artifact: Any = None
    """What a ``content_and_artifact`` tool returned beside its content."""


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


class Tool:
    """One ordinary tool: its model-facing schema and how to call it."""

    def __init__(self, tool: ToolLike) -> None:
        self._function: Callable[..., Any] | None = None
        if isinstance(tool, BaseTool):
            self.binding: BaseTool = tool
        elif callable(tool):
            self._function = tool
            name = getattr(tool, "__name__", type(tool).__name__)
            schema = create_schema_from_function(
                name, tool, filter_args=[IDEMPOTENCY_PARAMETER], parse_docstring=False
            )
            self.binding = StructuredTool.from_function(
                func=tool if not inspect.iscoroutinefunction(tool) else None,
                coroutine=tool if inspect.iscoroutinefunction(tool) else None,
                name=name,
                description=inspect.getdoc(tool) or name,
                args_schema=schema,
            )
        else:
            raise TypeError(f"a tool must be a function or a langchain BaseTool, not {tool!r}")
        self.name = self.binding.name
        # The JSON Schema of the tool's arguments, as the model sees it.
        self.parameters: dict[str, Any] = dict(
            convert_to_openai_tool(self.binding)["function"].get("parameters") or {}
        )
        self._takes_key = self._function is not None and (
            IDEMPOTENCY_PARAMETER in inspect.signature(self._function).parameters
        )

    async def call(self, args: Mapping[str, Any], key: str) -> Observation:
        try:
            return self._observed(await self._invoke(dict(args), key))
        except ToolAsks as asking:
            return Observation("", ok=True, asks=asking.question)
        except Exception as error:  # the model is told; the turn goes on
            return Observation(f"error: {type(error).__name__}: {error}", ok=False)

    async def answer(
        self, continuation: Mapping[str, Any], answer: Answer, status: AnswerStatus, key: str
    ) -> Observation:
        """Go on with a call this tool paused, with the person's answer."""
        binding = self.binding
        if not isinstance(binding, AnswersQuestions):
            return Observation(f"error: {self.name} cannot go on with a paused call", ok=False)
        try:
            return self._observed(await binding.answered(continuation, answer, status, key))
        except ToolAsks as asking:
            return Observation("", ok=True, asks=asking.question)
        except Exception as error:  # the model is told; the turn goes on
            return Observation(f"error: {type(error).__name__}: {error}", ok=False)

    @property
    def _has_artifact(self) -> bool:
        return self._function is None and self.binding.response_format == "content_and_artifact"

    def _observed(self, value: Any) -> Observation:
        """A finished call's observation: the content as text, and the artifact if any."""
        if self._has_artifact and isinstance(value, tuple) and len(value) == 2:
            content, artifact = value
            return Observation(_text(content), ok=True, artifact=artifact)
        return Observation(_text(value), ok=True)

    async def _invoke(self, args: dict[str, Any], key: str) -> Any:
        if self._function is None:
            config: Any = {"configurable": {IDEMPOTENCY_PARAMETER: key}}
            if not self._has_artifact:
                return await self.binding.ainvoke(args, config=config)
            # langchain hands the artifact back only to a call made with a tool call
            # (as a ToolMessage); with bare arguments it returns the content alone.
            call = ToolCall(name=self.name, args=args, id=key, type="tool_call")
            message = await self.binding.ainvoke(call, config=config)
            if isinstance(message, ToolMessage):
                return message.content, message.artifact
            return message
        schema = self.binding.args_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            args = schema.model_validate(args).model_dump()
        if self._takes_key:
            args[IDEMPOTENCY_PARAMETER] = key
        if inspect.iscoroutinefunction(self._function):
            return await self._function(**args)
        function = self._function
        return await anyio.to_thread.run_sync(lambda: function(**args))
