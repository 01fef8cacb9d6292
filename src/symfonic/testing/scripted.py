"""A deterministic chat model for tests, demos and benchmarks.

Its reply is a function of its own transcript, so concurrent sessions stay
deterministic; it streams and binds tools like a provider model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict

Reply = AIMessage | str
Respond = Callable[[list[BaseMessage]], Reply]


def reply(text: str) -> AIMessage:
    """A final answer."""
    return AIMessage(content=text)


def call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> AIMessage:
    """A round with one tool call (``id`` is derived deterministically when omitted)."""
    return calls((name, args or {}, id))


def calls(*specs: tuple[str, dict[str, Any], str | None], text: str = "") -> AIMessage:
    """A round with several tool calls, each ``(name, args, id or None)``."""
    return AIMessage(
        content=text,
        tool_calls=[
            {"name": name, "args": args, "id": call_id or "", "type": "tool_call"}
            for name, args, call_id in specs
        ],
    )


def current_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages of the turn being answered: from the last person's message on.

    A scripted ``respond`` decides from these, not from the whole history, so a
    session's earlier turns never steer its answer to this one.
    """
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return list(messages[i:])
    return list(messages)


def _turn_position(messages: Sequence[BaseMessage]) -> int:
    """How many assistant messages the current turn already has."""
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage):
            count += 1
    return count


class ScriptedChatModel(BaseChatModel):
    """Replies with ``respond(messages)``; never touches the network."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    respond: Respond

    @classmethod
    def from_script(cls, script: Sequence[Reply]) -> ScriptedChatModel:
        """Reply ``script[i]`` where ``i`` is the turn's count of assistant messages so far."""
        fixed = list(script)
        if not fixed:
            raise ValueError("a script needs at least one reply")

        def respond(messages: list[BaseMessage]) -> Reply:
            return fixed[min(_turn_position(messages), len(fixed) - 1)]

        return cls(respond=respond)

    @property
    def _llm_type(self) -> str:
        return "symfonic-scripted"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self  # the script decides which tools are called

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        answer = self.respond(list(messages))
        message = AIMessage(content=answer) if isinstance(answer, str) else answer
        if not message.tool_calls:
            return message
        # Ids derived from the transcript: the same transcript gets the same ids.
        digest = hashlib.sha256(
            "".join(f"{m.type}:{m.content}" for m in messages).encode()
        ).hexdigest()[:12]
        tool_calls = [
            {**c, "id": c.get("id") or f"call_{digest}_{i}"}
            for i, c in enumerate(message.tool_calls)
        ]
        return AIMessage(content=message.content, tool_calls=tool_calls)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _chunks(self, message: AIMessage) -> Iterator[ChatGenerationChunk]:
        text = message.content if isinstance(message.content, str) else ""
        words = text.split(" ")
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            if piece:
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        if not text and not message.tool_calls:
            # An empty answer is still a reply: one empty chunk, as a provider sends.
            yield ChatGenerationChunk(message=AIMessageChunk(content=""))
        if message.tool_calls:
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        tool_call_chunk(
                            name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i
                        )
                        for i, c in enumerate(message.tool_calls)
                    ],
                )
            )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        yield from self._chunks(self._reply(messages))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._reply(messages)):
            yield chunk
