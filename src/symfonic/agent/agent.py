"""``SymfonicAgent``: an agent's configuration, and the Python API to run it.

The agent holds configuration and, once opened, a store
(:mod:`symfonic.agent.opened_store`); what it does on that store outside a
turn -- sessions, the pause list, sweep and prune -- is
:mod:`symfonic.agent.sessions`, and starting turns and resumes as background
runs, and reading and cancelling runs, is :mod:`symfonic.agent.runs`. A paused
turn's state is in the store from the moment it pauses, which is why any
worker -- this process later, or another one that never saw the pause -- can
resume it. The agent also keeps the records of up to 1,024 pauses it wrote and
was not yet asked to resume (:class:`~symfonic.turns.recent_pauses.RecentPauses`),
so a resume that comes back to it skips a read; only what never changes about a
pause is taken from there, and the claim still decides whether it can be answered. Its turns are
the steps of :mod:`symfonic.turns`: :func:`~symfonic.turns.start.first_turn`
and :func:`~symfonic.turns.resume.resume_turn`, each inside its span when an
SDK records.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from symfonic.agent.models import resolve_model
from symfonic.agent.queued import QueuedMessages
from symfonic.agent.runs import BackgroundRuns
from symfonic.agent.sessions import SessionsAndPauses
from symfonic.capabilities.human.interactions import Interaction
from symfonic.capabilities.human.toolbox import Approval, ToolBox
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import SessionRecord, Store
from symfonic.core.contracts.types import Answer, AnswerStatus, Escalation, Event, TurnResult
from symfonic.core.telemetry.turns import traced_turn
from symfonic.kernel.heartbeat import Heartbeat
from symfonic.kernel.limits import Limits
from symfonic.kernel.loop import Kernel
from symfonic.kernel.model_calls import BoundModel, bind_tools, streams_natively
from symfonic.kernel.tools import ToolLike, tool_connections
from symfonic.turns.background import RunHandle
from symfonic.turns.budget import Quota
from symfonic.turns.delegation import (
    DEFAULT_DELEGATION_DEPTH,
    DelegateTool,
    DelegationHost,
    check_delegates,
)
from symfonic.turns.outcomes import collect
from symfonic.turns.resolve import ResolvedPause
from symfonic.turns.resume import resume_turn
from symfonic.turns.start import OnPendingPause, TakeOver, first_turn, owned_session

DEFAULT_PAUSE_TTL = 24 * 3600.0
DEFAULT_CLAIM_LEASE = 120.0
# How long a first turn's run marker holds its session. Only a worker that dies
# mid-turn leaves a marker to run out (one whose clear met an outage is cleared by
# the next sweep): long enough for any turn's model calls and tools to finish.
DEFAULT_RUN_LEASE = 600.0


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SymfonicAgent(SessionsAndPauses, QueuedMessages, BackgroundRuns):
    """Model, instructions, tools and limits, served by name.

    ``approval`` names the tools a person must approve (a set), or maps each to
    the audience scope that may approve it, or to a rule that decides per call
    (:func:`symfonic.needs_approval`). ``interactions`` adds forms declared
    with :func:`symfonic.interaction`. ``store`` is a URL (default
    ``SYMFONIC_STORE`` or ``sqlite:///symfonic.db``) or an opened store shared
    with other agents. ``record_answers`` puts a person's answers on the resume
    spans (``symfonic.answer.content``); off by default, as answers may be private.
    ``delegates`` are other agents (or their :meth:`as_tool`) this one may call
    as tools, at most ``max_delegation_depth`` levels deep, never in a cycle.
    ``ask_human_audience`` and ``ask_human_escalate`` address ``ask_human``'s
    questions, as ``audience`` and ``escalate`` do a form's.
    """

    def __init__(
        self,
        *,
        name: str = "assistant",
        model: BaseChatModel | str,
        instructions: str = "",
        tools: Iterable[ToolLike] = (),
        approval: Approval = (),
        interactions: Iterable[Interaction] = (),
        ask_human_audience: str | None = None,
        ask_human_escalate: Iterable[Escalation] = (),
        store: str | Store | None = None,
        limits: Limits | None = None,
        pause_ttl: float = DEFAULT_PAUSE_TTL,
        claim_lease: float = DEFAULT_CLAIM_LEASE,
        run_lease: float = DEFAULT_RUN_LEASE,
        quota: Quota | None = None,
        clock: Callable[[], datetime] = _utcnow,
        record_answers: bool = False,
        delegates: Iterable[SymfonicAgent | DelegateTool] = (),
        max_delegation_depth: int = DEFAULT_DELEGATION_DEPTH,
    ) -> None:
        if pause_ttl <= 0 or claim_lease <= 0 or run_lease <= 0:
            raise ConfigurationError(
                "pause_ttl, claim_lease and run_lease must be positive seconds"
            )
        super().__init__(store, pause_ttl=pause_ttl)
        self.name = name
        self.model = resolve_model(model)
        self.instructions = instructions
        self._delegates = tuple(
            each if isinstance(each, DelegateTool) else each.as_tool() for each in delegates
        )
        check_delegates(name, self._delegates, max_delegation_depth)
        self.toolbox = ToolBox(
            tools,
            interactions=interactions,
            approval=approval,
            ask_human_audience=ask_human_audience,
            ask_human_escalate=ask_human_escalate,
            delegates=[each.binding() for each in self._delegates],
        )
        self.limits = limits or Limits()
        self.claim_lease = float(claim_lease)
        self.run_lease = float(run_lease)
        self.quota = quota
        self.clock = clock
        self.record_answers = record_answers
        self._bound_model: BoundModel | None = None
        # Handles given out for messages queued here, finished by the runs they become.
        self._waiting: dict[str, RunHandle] = {}
        self._streaming = streams_natively(self.model)
        # The runs this agent started and still drives, so a cancel stops them here.
        self._started: weakref.WeakValueDictionary[str, RunHandle] = weakref.WeakValueDictionary()

    def __repr__(self) -> str:
        return f"SymfonicAgent(name={self.name!r}, tools={sorted(self.toolbox.tools)!r})"

    # lifecycle -------------------------------------------------------------

    async def __aenter__(self) -> SymfonicAgent:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store if the agent opened it, and its tools' live connections."""
        for connections in tool_connections(self.toolbox.tools.values()):
            await connections.aclose()
        await self.close_store()

    # delegation -------------------------------------------------------------

    def as_tool(self, name: str | None = None, description: str | None = None) -> DelegateTool:
        """This agent, as a tool another agent may call with a task.

        The tool's input is a task in words, its output this agent's final
        answer; its turn runs in a session of its own, and a pause in it is the
        calling turn's pause. ``name`` defaults to the agent's name.
        """
        return DelegateTool(
            self,
            name or self.name,
            description or f"Give the agent {self.name} a task; it answers with its result.",
        )

    @property
    def delegates(self) -> tuple[DelegateTool, ...]:
        """The agents this one may call as tools."""
        return self._delegates

    # pieces the turn flows use --------------------------------------------

    def kernel(
        self,
        session_id: str,
        plan: Limits | None = None,
        *,
        heartbeat: Heartbeat | None = None,
        principal: Principal | None = None,
        host: DelegationHost | None = None,
    ) -> Kernel:
        """The model loop for one turn; ``host``: whose store its delegates run on
        (a delegate's turn runs on its caller's, default this agent's)."""
        if self._bound_model is None:
            self._bound_model = bind_tools(self.model, self.toolbox)
        return Kernel(
            self.model,
            self.toolbox,
            plan or self.limits,
            session_id,
            heartbeat,
            # Often enough for either lease a turn holds: a resume's claim, a first turn's marker.
            heartbeat_interval=min(self.claim_lease, self.run_lease) / 3,
            bound_model=self._bound_model,
            streaming=self._streaming,
            principal=principal or Principal("local"),
            delegates={each.name: each.bound(host or self) for each in self._delegates},
            telemetry=(host or self).telemetry,
        )

    def context(self, history: Sequence[BaseMessage]) -> list[BaseMessage]:
        """What the model sees before the turn: the instructions, then the history."""
        system: list[BaseMessage] = [SystemMessage(self.instructions)] if self.instructions else []
        return [*system, *history]

    # sessions ---------------------------------------------------------------

    async def get_session(
        self, session_id: str, principal: Principal | str = "local"
    ) -> SessionRecord:
        await self.open()
        return await owned_session(self, session_id, Principal.of(principal))

    # turns ------------------------------------------------------------------

    async def stream(
        self,
        message: str,
        session_id: str | None = None,
        principal: Principal | str = "local",
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: TakeOver = "reject",
    ) -> AsyncGenerator[Event, None]:
        """Run a turn, yielding its events; request errors raise before the first.

        ``on_busy``: while another turn holds the session, refuse this one
        (``SessionBusy``), or cancel that turn first: ``interrupt``, or
        ``rollback``, which also deletes its run (docs/runs.md)."""
        await self.open()
        turn = self._first_turn(
            message, session_id, principal, base_revision, on_pending_pause, on_busy
        )
        # aclosing: a consumer that stops early closes the turn now, not at GC.
        async with aclosing(turn) as events:
            async for event in events:
                yield event

    async def run(
        self,
        message: str,
        session_id: str | None = None,
        principal: Principal | str = "local",
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: TakeOver = "reject",
    ) -> TurnResult:
        """Run a turn to its end: what :meth:`stream` yields, collected."""
        await self.open()
        return await collect(
            self._first_turn(
                message, session_id, principal, base_revision, on_pending_pause, on_busy
            )
        )

    def _first_turn(
        self,
        message: str,
        session_id: str | None,
        principal: Principal | str,
        base_revision: int | None,
        on_pending_pause: OnPendingPause,
        on_busy: TakeOver = "reject",
    ) -> AsyncGenerator[Event, None]:
        who = Principal.of(principal)
        turn = first_turn(
            self,
            who,
            message,
            session_id,
            base_revision=base_revision,
            on_pending_pause=on_pending_pause,
            on_busy=on_busy,
        )
        return self._traced(turn, who, session_id)

    async def resume_stream(
        self,
        token: str | ResolvedPause,
        answer: Answer,
        principal: Principal | str = "local",
        *,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The resumed turn's events; request errors raise before the first.

        ``token``: the pause's token, or the pause a transport already resolved
        it to (:func:`~symfonic.turns.resolve.resolve_row`), so that a token is
        verified once. ``args_digest``: as in :meth:`resume`."""
        await self.open()
        who = Principal.of(principal)
        resumed = resume_turn(self, token, answer, who, status, args_digest=args_digest)
        async with aclosing(self._traced_resume(resumed, who, answer)) as events:
            async for event in events:
                yield event

    async def resume(
        self,
        token: str,
        answer: Answer = None,
        principal: Principal | str = "local",
        *,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
    ) -> TurnResult:
        """Answer a pause and run the turn on; raises the refusal's own error type.

        ``args_digest``: the approval's digest as the person was shown it; one
        that is not the pause's raises :class:`StaleQuestion` before anything is
        claimed, and the token stays usable."""
        await self.open()
        who = Principal.of(principal)
        resumed = resume_turn(self, token, answer, who, status, args_digest=args_digest)
        return await collect(self._traced_resume(resumed, who, answer))

    def _traced(
        self, turn: AsyncGenerator[Event, None], who: Principal, session_id: str | None
    ) -> AsyncGenerator[Event, None]:
        """A first turn inside its ``symfonic.turn`` span (when an SDK records)."""
        if not self.telemetry:
            return turn
        return traced_turn(turn, agent=self.name, principal=who.name, session_id=session_id)

    def _traced_resume(
        self, turn: AsyncGenerator[Event, None], who: Principal, answer: Any
    ) -> AsyncGenerator[Event, None]:
        """A resume inside its ``symfonic.resume`` span; the answer only if opted in."""
        if not self.telemetry:
            return turn
        recorded = json.dumps(answer, default=str) if self.record_answers else None
        return traced_turn(turn, agent=self.name, principal=who.name, resume=True, answer=recorded)
