"""A zero-cost scripted chat model, the same one on both sides of the benchmark.

langchain-core's fake models do not emit tool calls reliably, so this is the
smallest ``BaseChatModel`` that does: the first model call of a turn asks for the
gated tool, the next one answers. "Turn" is decided from the transcript alone (the
number of AI messages since the last human message), like symfonic's
``ScriptedChatModel.from_script``, so both systems see the same two model replies.

``_agenerate`` is overridden because the base class would otherwise push every
call through a thread pool, a cost no real async provider client pays.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from bench.history import FINAL_ANSWER, TOOL_ARGS, TOOL_NAME

_call_ids = itertools.count()


def _ai_messages_since_human(messages: Sequence[BaseMessage]) -> int:
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage):
            count += 1
    return count


def scripted_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """Call the gated tool first, then give the final answer."""
    if _ai_messages_since_human(messages) == 0:
        call_id = f"call_{next(_call_ids):08d}"
        return AIMessage(
            content="",
            tool_calls=[{"name": TOOL_NAME, "args": dict(TOOL_ARGS), "id": call_id}],
        )
    return AIMessage(content=FINAL_ANSWER)


class ScriptedToolModel(BaseChatModel):
    """Replies from :func:`scripted_reply`; ``bind_tools`` returns the model itself."""

    @property
    def _llm_type(self) -> str:
        return "bench-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=scripted_reply(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=scripted_reply(messages))])
