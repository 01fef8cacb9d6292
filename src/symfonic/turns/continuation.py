"""Running the kernel on from a paused turn, with the person's answer as its observation.

Nothing is taken from the process that paused: the checkpoint and the committed history
are all there is.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

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
    yield settled.result
    async with aclosing(
        continue_from(
            kernel,
            outcome,
            settled.result.content,
            history,
            failed=settled.failed,
            artifact=settled.artifact,
        )
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
    artifact: Any = None,
) -> AsyncGenerator[RawEvent, None]:
    """Rebuild the turn with ``observation`` as the answered call's, and run the kernel on.

    ``failed`` says the answered call ran and failed, so the model reads its
    observation as an error, as it would have in an unpaused round; ``artifact``
    is what the tool returned beside its content, kept on the observation as an
    unpaused round keeps it.

    The answered call's own result event is the caller's to yield; the calls the
    round did not dispatch are announced here.
    """
    checkpoint = outcome.turn
    assert checkpoint is not None
    with span(REHYDRATE, recording=kernel.telemetry):
        messages = rehydrate(replace(outcome, response=observation))
    messages = _observed_as(messages, len(checkpoint.messages), failed=failed, artifact=artifact)
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


@dataclass(frozen=True)
class _SettledCall:
    """The answered call's result event, whether it failed, and the tool's artifact."""

    result: ToolResultEvent
    failed: bool = False
    artifact: Any = None


async def _settle(
    kernel: Kernel, pending: PendingInteraction, outcome: ResumeOutcome
) -> _SettledCall | PendingInteraction:
    """The answered call's result event and whether it failed, or the tool's next question.

    A tool that asked mid-call goes on with the answer; an approved call runs
    now, once; any other answer is the call's observation as it is.
    """
    if pending.continuation is not None:
        went_on = await kernel.answer(pending, outcome.response, outcome.status)
        if isinstance(went_on, PendingInteraction):
            return went_on
        message, result = went_on
        return _SettledCall(result, message.status == "error", message.artifact)
    resolution = resolve(pending.kind, outcome.response, outcome.status, pending.args)
    if resolution.run_args is not None and pending.edited_by is not None:
        # Approved as a quorum's edit proposed it: the model is told its call was edited.
        resolution = replace(resolution, edited=True)
    if resolution.run_args is None:
        observation = resolution.observation or ""
        return _SettledCall(
            ToolResultEvent(
                tool_call_id=pending.tool_call_id,
                name=pending.tool_name,
                content=observation,
                status=resolution.status,
            )
        )
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
    edited = result.model_copy(update={"content": observation})
    return _SettledCall(edited, ran.status == "error", ran.artifact)


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


def _observed_as(
    messages: tuple[BaseMessage, ...], at: int, *, failed: bool, artifact: Any
) -> tuple[BaseMessage, ...]:
    """The messages with the answered call's observation (at ``at``) as the call left
    it: marked an error if it failed, carrying the tool's artifact if it had one."""
    update: dict[str, Any] = {"status": "error"} if failed else {}
    if artifact is not None:
        update["artifact"] = artifact
    if not update:
        return messages
    observed = messages[at].model_copy(update=update)
    return (*messages[:at], observed, *messages[at + 1 :])


def _call_name(messages: Sequence[BaseMessage], call_id: str) -> str:
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or ():
            if call["id"] == call_id:
                return str(call["name"])
    return ""
