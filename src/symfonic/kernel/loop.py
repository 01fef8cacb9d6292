"""The provider-agnostic tool-calling loop.

A round with an interaction stops before anything in it is dispatched, and every
dispatched tool call is answered by exactly one tool message right after it.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    Callable,
    Coroutine,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    KernelDone,
    KernelResult,
    PendingInteraction,
    RawEvent,
    StopReason,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from symfonic.core.messages import text_of
from symfonic.core.telemetry import calls
from symfonic.kernel.delegates import Delegate, Delegated, DelegatedCall
from symfonic.kernel.limits import Limits
from symfonic.kernel.model_calls import BoundModel, bind_tools, call_model
from symfonic.kernel.toolbox import RoundTools, UndecidedCall
from symfonic.kernel.tools import Observation, idempotency_key

UNDECIDED_ROUND = (
    "not dispatched: another call in this round could not be checked for approval, so "
    "nothing in the round ran; call it again if it is still needed"
)


@dataclass(frozen=True)
class Counters:
    """What a turn has used so far; carried through a pause in the checkpoint."""

    rounds: int = 0
    model_calls: int = 0
    tokens: int = 0


@dataclass
class _Progress:
    """One run of the loop so far: the turn's messages and what it has used."""

    messages: list[BaseMessage]
    used: Counters

    def spent(self, limits: Limits) -> bool:
        """Whether the turn's model calls or tokens are used up."""
        used = self.used
        return used.model_calls >= limits.max_model_calls or (
            limits.max_tokens_per_turn is not None and used.tokens >= limits.max_tokens_per_turn
        )

    def replied(self, reply: AIMessage) -> None:
        """Count one model call and its tokens, and keep its reply."""
        tokens = reply.usage_metadata["total_tokens"] if reply.usage_metadata else 0
        self.used = replace(
            self.used, model_calls=self.used.model_calls + 1, tokens=self.used.tokens + int(tokens)
        )
        self.messages.append(reply)

    def done(
        self,
        reason: StopReason,
        *,
        answer: str = "",
        interaction: PendingInteraction | None = None,
    ) -> KernelDone:
        """The turn's end, with the messages as they stand now."""
        return KernelDone(
            KernelResult(
                stop_reason=reason,
                messages=tuple(self.messages),
                answer=answer,
                rounds=self.used.rounds,
                model_calls=self.used.model_calls,
                tokens=self.used.tokens,
                interaction=interaction,
            )
        )


@dataclass
class Kernel:
    """Live handles for one turn: the model bound to its tools, the tools, the limits.

    ``bound_model`` is bound once per agent, not once a turn. ``principal``: whose
    message the turn answers, which approval rules decide with. ``telemetry``: trace
    and measure calls. Whoever holds a lease on the turn keeps it (`symfonic.turns.lease`).
    """

    model: BaseChatModel
    toolbox: RoundTools
    limits: Limits
    session_id: str
    bound_model: BoundModel | None = field(default=None, repr=False)
    streaming: bool = True
    principal: Principal = field(default_factory=lambda: Principal("local"))
    delegates: Mapping[str, Delegate] = field(default_factory=dict)
    telemetry: bool = False

    @property
    def bound(self) -> BoundModel:
        """The model bound to the tools: as given (an agent binds once), else bound now."""
        if self.bound_model is None:
            self.bound_model = bind_tools(self.model, self.toolbox)
        return self.bound_model

    async def dispatch(
        self, call: ToolCall
    ) -> tuple[ToolMessage, ToolResultEvent] | PendingInteraction:
        """Run one ordinary call; an unknown tool is an error observation.

        A tool that asks a person mid-call makes the call a pause instead: the
        interaction returned is the round's stop.
        """
        tool = self.toolbox.tools.get(call["name"])
        if tool is None:
            return await self._observe(call, None)
        return await self._observe(call, lambda key: tool.call(call["args"], key))

    async def answer(
        self, pending: PendingInteraction, answer: Answer, status: AnswerStatus
    ) -> tuple[ToolMessage, ToolResultEvent] | PendingInteraction:
        """Go on with a call whose tool asked ``pending``, with the person's answer."""
        call = ToolCall(name=pending.tool_name, args=pending.args, id=pending.tool_call_id)
        tool, continuation = self.toolbox.tools.get(pending.tool_name), pending.continuation
        if tool is None or continuation is None:
            return await self._observe(call, None)
        return await self._observe(call, lambda key: tool.answer(continuation, answer, status, key))

    async def _observe(
        self, call: ToolCall, work: Callable[[str], Coroutine[Any, Any, Observation]] | None
    ) -> tuple[ToolMessage, ToolResultEvent] | PendingInteraction:
        with calls.tool_call(call["name"], str(call["id"]), recording=self.telemetry) as traced:
            if work is None:
                observation = Observation(f"error: there is no tool named {call['name']!r}", False)
            else:
                key = idempotency_key(self.session_id, str(call["id"]))
                observation = await work(key)
                if observation.asks is not None:
                    traced.observed(True)
                    return observation.asks.pending(str(call["id"]), call["name"], call["args"])
            traced.observed(observation.ok)
        return _observed(call, observation.content, observation.ok, observation.artifact)

    async def _delegate(self, call: ToolCall, rounds_left: int) -> Delegated:
        """Run one delegate call's turn."""
        delegated = DelegatedCall(
            session_id=self.session_id,
            tool_call_id=str(call["id"]),
            args=dict(call["args"]),
            principal=self.principal,
            rounds_left=rounds_left,
        )
        with calls.tool_call(call["name"], str(call["id"]), recording=self.telemetry) as traced:
            outcome = await self.delegates[call["name"]].delegate(delegated)
            traced.observed(outcome.ok)
        return outcome

    async def run(
        self,
        context: Sequence[BaseMessage],
        turn: Sequence[BaseMessage],
        counters: Counters = Counters(),
    ) -> AsyncGenerator[RawEvent, None]:
        """Continue ``turn`` (the in-flight messages) against ``context`` (history).

        Yields typed events and ends with exactly one `KernelDone`. Each
        round: stop if the budget is spent, ask the model, stop at its answer or
        at the round limit, announce its calls, stop at the first that needs a
        person, else answer them all. The round's steps are awaited, not nested
        generators: a turn closed at its end leaves none for the event loop to close.
        """
        progress = _Progress(list(turn), counters)
        while True:
            if progress.spent(self.limits):
                yield progress.done(StopReason.BUDGET)
                return
            reply: AIMessage | None = None
            with calls.model_call(self.model, recording=self.telemetry) as traced:
                async for item in call_model(
                    self.bound, [*context, *progress.messages], streaming=self.streaming
                ):
                    if isinstance(item, TextDeltaEvent):
                        yield item
                    else:
                        reply = item
                assert reply is not None
                traced.replied(reply.usage_metadata)
            progress.replied(reply)
            if not reply.tool_calls:
                yield progress.done(StopReason.FINAL, answer=text_of(reply))
                return
            if progress.used.rounds >= self.limits.max_tool_rounds:
                yield progress.done(StopReason.TOOL_LIMIT)
                return
            progress.used = replace(progress.used, rounds=progress.used.rounds + 1)
            for call in reply.tool_calls:
                yield _announced(call)
            stop = await self._first_stop(reply.tool_calls)
            if isinstance(stop, PendingInteraction):
                yield progress.done(StopReason.PAUSED, interaction=stop)
                return
            if stop is not None:
                for message, event in _undecided_round(reply.tool_calls, stop):
                    progress.messages.append(message)
                    yield event
                continue
            for call in self._delegates_first(reply.tool_calls):
                answered = await self._answer(call, progress)
                if isinstance(answered, PendingInteraction):
                    yield progress.done(StopReason.PAUSED, interaction=answered)
                    return
                message, event = answered
                # Answered now, in the transcript too: a later delegate of this
                # round that pauses keeps this one's answer in its checkpoint.
                progress.messages.append(message)
                yield event

    def _delegates_first(self, round_calls: Sequence[ToolCall]) -> list[ToolCall]:
        """The round's calls in the order they run: its delegates, then the rest.

        A delegate that pauses pauses the turn before any ordinary call of its
        round has run (see `symfonic.kernel.delegates`).
        """
        delegated = [call for call in round_calls if call["name"] in self.delegates]
        if not delegated:
            return list(round_calls)
        return delegated + [call for call in round_calls if call["name"] not in self.delegates]

    async def _answer(
        self, call: ToolCall, progress: _Progress
    ) -> tuple[ToolMessage, ToolResultEvent] | PendingInteraction:
        """Run one call: its tool, or a delegate's turn, whose rounds count as the
        turn's; a delegate's turn that pauses gives its interaction instead."""
        if call["name"] not in self.delegates:
            return await self.dispatch(call)
        outcome = await self._delegate(call, self.limits.max_tool_rounds - progress.used.rounds)
        if outcome.interaction is not None:
            return outcome.interaction
        progress.used = replace(progress.used, rounds=progress.used.rounds + outcome.rounds)
        return _observed(call, outcome.observation, outcome.ok)

    async def _first_stop(
        self, calls: Sequence[ToolCall]
    ) -> PendingInteraction | UndecidedCall | None:
        """The first call that stops the round, asked in order before any is dispatched.

        Calls after it are never asked: the round runs none of them anyway.
        """
        for call in calls:
            stop = await self.toolbox.interaction_for(call, self.principal)
            if stop is not None:
                return stop
        return None


def _announced(call: ToolCall) -> ToolCallEvent:
    return ToolCallEvent(tool_call_id=str(call["id"]), name=call["name"], args=dict(call["args"]))


def _observed(
    call: ToolCall, content: str, ok: bool, artifact: Any = None
) -> tuple[ToolMessage, ToolResultEvent]:
    """One call's observation, as the transcript keeps it and as the stream shows it.

    ``artifact`` rides on the turn's message (the model and callbacks are handed
    it); the stored transcript keeps only what a provider is sent again.
    """
    call_id, name = str(call["id"]), call["name"]
    message = ToolMessage(
        content=content,
        tool_call_id=call_id,
        name=name,
        status="success" if ok else "error",
        artifact=artifact,
    )
    event = ToolResultEvent(
        tool_call_id=call_id, name=name, content=content, status="ok" if ok else "error"
    )
    return message, event


def _undecided_round(
    calls: Sequence[ToolCall], undecided: UndecidedCall
) -> list[tuple[ToolMessage, ToolResultEvent]]:
    """A round that runs nothing: the undecided call's error, and every other call skipped."""
    answered: list[tuple[ToolMessage, ToolResultEvent]] = []
    for call in calls:
        call_id, name = str(call["id"]), call["name"]
        failed = call_id == undecided.tool_call_id
        content = undecided.reason if failed else UNDECIDED_ROUND
        message = ToolMessage(
            content=content,
            tool_call_id=call_id,
            name=name,
            status="error" if failed else "success",
        )
        event = ToolResultEvent(
            tool_call_id=call_id,
            name=name,
            content=content,
            status="error" if failed else "not_dispatched",
        )
        answered.append((message, event))
    return answered
