"""Running the kernel on from a paused turn, with the person's answer as its observation.

The answered call is settled first -- for an approval, that is the only moment
the gated tool runs, with the original or the edited arguments; for a tool that
asked mid-call, the tool goes on with the answer from the checkpoint's
continuation, and may ask again (a new pause, for the same call) -- then the turn
is rebuilt from the checkpoint by :func:`rehydrate` and the kernel continues
exactly as if the round had just finished. Nothing is taken from the process
that paused: the checkpoint and the committed history are all there is.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace

from langchain_core.messages import BaseMessage
from langchain_core.messages.tool import ToolCall

from symfonic.capabilities.human.answers import resolve
from symfonic.capabilities.human.turnstate import ResumeOutcome, TurnCheckpoint
from symfonic.core.contracts.errors import InteractionConfigurationError
from symfonic.core.contracts.types import (
    KernelDone,
    KernelResult,
    PendingInteraction,
    RawEvent,
    StopReason,
    ToolResultEvent,
)
from symfonic.core.messages import message_of
from symfonic.core.telemetry.instruments import span
from symfonic.core.telemetry.names import REHYDRATE
from symfonic.kernel.loop import Kernel
from symfonic.turns.rehydrate import NOT_DISPATCHED, rehydrate


async def kernel_resume(
    kernel: Kernel, outcome: ResumeOutcome, history: Sequence[BaseMessage]
) -> AsyncGenerator[RawEvent, None]:
    """Settle the answered call, rebuild the turn, and continue the kernel.

    ``outcome.response`` is the person's answer as given; ``history`` is the
    session's committed history at the checkpoint's base revision.
    """
    checkpoint = outcome.turn
    if checkpoint is None:
        rehydrate(outcome)  # raises, saying why
        return
    pending = checkpoint.interaction
    answered = outcome.tool_call_id or outcome.interrupt_id
    if answered != pending.tool_call_id:
        raise InteractionConfigurationError(
            f"the answer is for call {answered!r}, but the recorded round stopped at "
            f"{pending.tool_call_id!r}"
        )
    settled = await _settle(kernel, pending, outcome)
    if isinstance(settled, PendingInteraction):
        # The tool asked again: the round stays stopped at the same call, on the new question.
        yield paused_again(checkpoint, settled)
        return
    result, failed = settled
    observation = result.content
    yield result
    async with aclosing(
        continue_from(kernel, outcome, observation, history, failed=failed)
    ) as events:
        async for raw in events:
            yield raw


async def continue_from(
    kernel: Kernel,
    outcome: ResumeOutcome,
    observation: str,
    history: Sequence[BaseMessage],
    *,
    failed: bool = False,
) -> AsyncGenerator[RawEvent, None]:
    """Rebuild the turn with ``observation`` as the answered call's, and run the kernel on.

    ``failed`` says the answered call ran and failed, so the model reads its
    observation as an error, as it would have in an unpaused round.

    The answered call's own result event is the caller's to yield; the calls the
    round did not dispatch are announced here.
    """
    checkpoint = outcome.turn
    assert checkpoint is not None
    with span(REHYDRATE, recording=kernel.telemetry):
        messages = rehydrate(replace(outcome, response=observation))
    if failed:
        messages = _failed_answer(messages, len(checkpoint.messages))
    for skipped in messages[len(checkpoint.messages) + 1 :]:
        call_id = str(getattr(skipped, "tool_call_id", ""))
        yield ToolResultEvent(
            tool_call_id=call_id,
            name=_call_name(messages, call_id),
            content=NOT_DISPATCHED,
            status="not_dispatched",
        )
    async with aclosing(kernel.run(history, messages, checkpoint.counters)) as events:
        async for raw in events:
            yield raw


async def _settle(
    kernel: Kernel, pending: PendingInteraction, outcome: ResumeOutcome
) -> tuple[ToolResultEvent, bool] | PendingInteraction:
    """The answered call's result event and whether it failed, or the tool's next question.

    A tool that asked mid-call goes on with the answer; an approved call runs
    now, once; any other answer is the call's observation as it is.
    """
    if pending.continuation is not None:
        went_on = await kernel.answer(pending, outcome.response, outcome.status)
        if isinstance(went_on, PendingInteraction):
            return went_on
        message, result = went_on
        return result, message.status == "error"
    resolution = resolve(pending.kind, outcome.response, outcome.status, pending.args)
    if resolution.run_args is None:
        observation = resolution.observation or ""
        return ToolResultEvent(
            tool_call_id=pending.tool_call_id,
            name=pending.tool_name,
            content=observation,
            status=resolution.status,
        ), False
    call = ToolCall(name=pending.tool_name, args=resolution.run_args, id=pending.tool_call_id)
    dispatched = await kernel.dispatch(call)
    if isinstance(dispatched, PendingInteraction):  # the approved tool asks a person
        return dispatched
    ran, result = dispatched
    observation = str(ran.content)
    if resolution.edited:
        observation = (
            f"(run with arguments edited by the person: "
            f"{json.dumps(resolution.run_args, sort_keys=True)})\n{observation}"
        )
    return result.model_copy(update={"content": observation}), ran.status == "error"


def paused_again(checkpoint: TurnCheckpoint, pending: PendingInteraction) -> KernelDone:
    """The recorded turn, stopped at the same call on a new question."""
    return KernelDone(
        KernelResult(
            stop_reason=StopReason.PAUSED,
            messages=tuple(message_of(dict(body)) for body in checkpoint.messages),
            answer="",
            rounds=checkpoint.counters.rounds,
            model_calls=checkpoint.counters.model_calls,
            tokens=checkpoint.counters.tokens,
            interaction=pending,
        )
    )


def _failed_answer(messages: tuple[BaseMessage, ...], at: int) -> tuple[BaseMessage, ...]:
    """The messages with the answered call's observation (at ``at``) marked an error."""
    failed = messages[at].model_copy(update={"status": "error"})
    return (*messages[:at], failed, *messages[at + 1 :])


def _call_name(messages: Sequence[BaseMessage], call_id: str) -> str:
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or ():
            if call["id"] == call_id:
                return str(call["name"])
    return ""
