"""One call of the model: tools bound, the reply streamed or not, and every tool call in it
given an id the loop answers by.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import Runnable

from symfonic.core.contracts.errors import ModelError
from symfonic.core.contracts.types import TextDeltaEvent
from symfonic.core.messages import text_of
from symfonic.kernel.toolbox import RoundTools

BoundModel = Runnable[LanguageModelInput, BaseMessage]


def bind_tools(model: BaseChatModel, toolbox: RoundTools) -> BoundModel:
    """The model with every tool and interaction of ``toolbox`` bound to it."""
    return model.bind_tools(toolbox.bindings())


def streams_natively(model: BaseChatModel) -> bool:
    """Whether ``model`` implements streaming itself.

    langchain's ``astream`` of a model that does not is ``ainvoke`` with a
    generator around it: the kernel calls ``ainvoke`` directly instead.
    """
    kind = type(model)
    return kind._astream is not BaseChatModel._astream or kind._stream is not BaseChatModel._stream


def merged_reply(parts: Sequence[AIMessage]) -> AIMessage:
    """One reply from what a model call streamed.

    Merged once at the end: adding chunks one by one re-merges the growing
    message every time, quadratic in the number of chunks a reply streams.
    """
    if not parts:
        raise ModelError("the model returned nothing")
    if len(parts) == 1:
        return parts[0]
    chunks = [part for part in parts if isinstance(part, AIMessageChunk)]
    if len(chunks) != len(parts):
        raise ModelError("the model streamed a whole message among its chunks")
    return add_ai_message_chunks(*chunks)


async def _parts(
    bound: BoundModel, messages: Sequence[BaseMessage], *, streaming: bool
) -> AsyncIterator[BaseMessage]:
    """What one model call sends: its chunks if it streams, else its whole reply.

    The messages go to the model as a prompt value, the form a chat model
    turns any input into first. Given a list, langchain-core would check and
    copy every message of the history twice over before the call.
    """
    prompt = ChatPromptValue.model_construct(messages=messages)
    if streaming:
        async for part in bound.astream(prompt):
            yield part
    else:
        yield await bound.ainvoke(prompt)


async def call_model(
    bound: BoundModel, messages: Sequence[BaseMessage], *, streaming: bool
) -> AsyncIterator[TextDeltaEvent | AIMessage]:
    """Stream one model call; yields text deltas, then the whole reply."""
    parts: list[AIMessage] = []
    try:
        async for part in _parts(bound, messages, streaming=streaming):
            # A streaming model sends AIMessageChunks; one that cannot stream
            # sends its whole AIMessage once.
            if not isinstance(part, AIMessage):
                continue
            text = text_of(part)
            if text:
                yield TextDeltaEvent(text=text)
            parts.append(part)
    except Exception as error:
        raise ModelError(f"the model call failed: {type(error).__name__}: {error}") from error
    whole = merged_reply(parts)
    calls = [
        {**call, "id": call.get("id") or f"call_{uuid.uuid4().hex[:24]}"}
        for call in whole.tool_calls
    ]
    yield AIMessage(content=whole.content, tool_calls=calls, usage_metadata=whole.usage_metadata)
