"""`SymfonicAgent`: an agent's configuration, and the Python API that runs its turns,
resumes, background runs and queued messages on its store (docs/architecture.md)."""

from __future__ import annotations

import json
import uuid
import weakref
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

from anyio.abc import TaskGroup
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from symfonic.agent.models import resolve_model
from symfonic.agent.opened_store import OpenedStore
from symfonic.agent.retention import Retention, prune
from symfonic.capabilities.human.interactions import Interaction
from symfonic.capabilities.human.toolbox import Approval, ToolBox
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.run_events import RunRecord
from symfonic.core.contracts.store import (
    PausePosition,
    PauseQuery,
    PauseRecord,
    PruneReport,
    QueuedTurn,
    SessionRecord,
    Store,
    SweepReport,
    TakenTurn,
    TurnPublish,
)
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    Escalation,
    Event,
    PauseState,
    TurnResult,
)
from symfonic.core.messages import MessageBody
from symfonic.core.telemetry.turns import traced_turn
from symfonic.kernel.limits import Limits
from symfonic.kernel.loop import Kernel
from symfonic.kernel.model_calls import BoundModel, bind_tools, streams_natively
from symfonic.kernel.tools import ToolLike, tool_connections
from symfonic.turns.background import RunHandle, RunOwner, Then, start_run
from symfonic.turns.budget import Quota
from symfonic.turns.delegation import (
    DEFAULT_DELEGATION_DEPTH,
    DelegateTool,
    DelegationHost,
    check_delegates,
)
from symfonic.turns.outcomes import collect
from symfonic.turns.queue import Started, enqueue, run_next
from symfonic.turns.resolve import ResolvedPause, resolve
from symfonic.turns.resume import resume_turn
from symfonic.turns.run_access import cancel_run, visible_run
from symfonic.turns.run_watch import StartedRuns
from symfonic.turns.start import OnBusy, OnPendingPause, TakeOver, first_turn, owned_session

DEFAULT_PAUSE_TTL = 24 * 3600.0
DEFAULT_CLAIM_LEASE = 120.0
# How long a first turn's run marker holds its session. Only a worker that dies
# mid-turn leaves a marker to run out (one whose clear met an outage is cleared by
# the next sweep): long enough for any turn's model calls and tools to finish.
DEFAULT_RUN_LEASE = 600.0
# How many pauses one read of `pauses()` takes from the store.
PAUSES_PAGE = 500


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SymfonicAgent(OpenedStore):
    """Model, instructions, tools and limits, served by name.

    ``approval`` names the tools a person must approve (a set), or maps each to
    the audience scope that may approve it, or to a rule that decides per call
    (`symfonic.needs_approval`). ``interactions`` adds forms declared with
    `symfonic.interaction`. ``store`` is a URL (default ``SYMFONIC_STORE`` or
    ``sqlite:///symfonic.db``) or an opened store shared with other agents.
    ``record_answers`` puts a person's answers on the resume spans; off by default.
    ``delegates`` are other agents (or their `as_tool`) this one may call as tools,
    at most ``max_delegation_depth`` levels deep, never in a cycle.
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
        self._streaming = streams_natively(self.model)
        # Handles given out for messages queued here while their callers hold them,
        # finished by the runs they become if those start here.
        self._waiting: weakref.WeakValueDictionary[str, RunHandle] = weakref.WeakValueDictionary()
        # The runs this agent started and still drives, so a cancel stops them here.
        self.started_runs = StartedRuns(lambda: self.store)

    def __repr__(self) -> str:
        return f"SymfonicAgent(name={self.name!r}, tools={sorted(self.toolbox.tools)!r})"

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

    def as_tool(self, name: str | None = None, description: str | None = None) -> DelegateTool:
        """This agent as a tool another agent may call with a task: its turn runs in a
        session of its own, and a pause in it is the calling turn's pause."""
        return DelegateTool(
            self,
            name or self.name,
            description or f"Give the agent {self.name} a task; it answers with its result.",
        )

    @property
    def delegates(self) -> tuple[DelegateTool, ...]:
        """The agents this one may call as tools."""
        return self._delegates

    def kernel(
        self,
        session_id: str,
        plan: Limits | None = None,
        *,
        principal: Principal | None = None,
        host: DelegationHost | None = None,
    ) -> Kernel:
        """The model loop for one turn; ``host``: whose store its delegates run on."""
        if self._bound_model is None:
            self._bound_model = bind_tools(self.model, self.toolbox)
        return Kernel(
            self.model,
            self.toolbox,
            plan or self.limits,
            session_id,
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

    # sessions and pauses ---------------------------------------------------

    async def create_session(
        self,
        principal: Principal | str = "local",
        metadata: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
    ) -> str:
        """A new session for ``principal``; ``session_id`` lets a transport choose the id."""
        await self.open()
        session_id = session_id or uuid.uuid4().hex
        await self.store.create_session(
            SessionRecord(
                session_id=session_id,
                principal=Principal.of(principal).name,
                agent=self.name,
                revision=0,
                metadata=dict(metadata or {}),
                created_at=self.clock(),
            )
        )
        return session_id

    async def get_session(
        self, session_id: str, principal: Principal | str = "local"
    ) -> SessionRecord:
        await self.open()
        return await owned_session(self, session_id, Principal.of(principal))

    async def seed_history(self, session_id: str, bodies: Sequence[MessageBody]) -> int:
        """Commit ``bodies`` as one published turn (imports, tests, benchmarks)."""
        await self.open()
        session = await self.store.get_session(session_id)
        if session is None:
            raise ConfigurationError(f"no session {session_id!r}")
        seed = TurnPublish(session_id, session.revision, list(bodies), run_id="seed")
        return await self.store.publish_turn(seed)

    async def pauses(
        self, principal: Principal | str = "local", state: PauseState = PauseState.PENDING
    ) -> list[PauseRecord]:
        """Every pause this principal may answer, oldest first; a pending one past its
        expiry is left out, swept or not, as it can no longer be answered."""
        await self.open()
        who = Principal.of(principal)
        unexpired = self.clock() if state is PauseState.PENDING else None
        listed: list[PauseRecord] = []
        while True:
            after = PausePosition.of(listed[-1]) if listed else None
            query = PauseQuery(
                state, who.name, who.scopes, limit=PAUSES_PAGE, after=after, unexpired_at=unexpired
            )
            page = await self.store.list_pauses(query)
            listed += page
            if len(page) < PAUSES_PAGE:
                return listed

    def token_for(self, pause: PauseRecord) -> str:
        return self.settlement.signer.mint(pause.pause_id)

    async def sweep(self) -> SweepReport:
        """Expire stale pauses, abandon claims whose worker stopped renewing, and seal the
        audit records committed since the last seal."""
        await self.open()
        report = await self.store.sweep(self.clock())
        await self.store.seal_audit()
        return report

    async def prune(
        self, retention: Retention, on_batch: Callable[[PruneReport], None] | None = None
    ) -> PruneReport:
        """Delete finished sessions idle for longer than the retention keeps them."""
        await self.open()
        return await prune(self.store, retention, self.clock(), on_batch)

    # turns and resumes -----------------------------------------------------

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
        # aclosing: a consumer that stops early closes the turn now, not at GC.
        async with aclosing(self._traced(turn, who, session_id)) as events:
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
        """Run a turn to its end: what `stream` yields, collected."""
        return await collect(
            self.stream(
                message,
                session_id,
                principal,
                base_revision=base_revision,
                on_pending_pause=on_pending_pause,
                on_busy=on_busy,
            )
        )

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

        ``token``: the pause's token, or the pause a transport already resolved it
        to, so that a token is verified once. ``args_digest``: as in `resume`."""
        await self.open()
        who = Principal.of(principal)
        resumed = resume_turn(self, token, answer, who, status, args_digest=args_digest)
        if self.telemetry:
            recorded = json.dumps(answer, default=str) if self.record_answers else None
            resumed = traced_turn(
                resumed, agent=self.name, principal=who.name, resume=True, answer=recorded
            )
        async with aclosing(resumed) as events:
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
        that is not the pause's raises `StaleQuestion` before anything is
        claimed, and the token stays usable."""
        resumed = self.resume_stream(
            token, answer, principal, status=status, args_digest=args_digest
        )
        return await collect(resumed)

    def _traced(
        self, turn: AsyncGenerator[Event, None], who: Principal, session_id: str | None
    ) -> AsyncGenerator[Event, None]:
        """A first turn inside its ``symfonic.turn`` span (when an SDK records)."""
        if not self.telemetry:
            return turn
        return traced_turn(turn, agent=self.name, principal=who.name, session_id=session_id)

    # background runs and queued messages -----------------------------------

    async def start(
        self,
        message: str,
        session_id: str | None = None,
        principal: Principal | str = "local",
        *,
        tasks: TaskGroup,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: OnBusy = "reject",
        started: Started | None = None,
    ) -> RunHandle:
        """Start a turn that runs in ``tasks`` whether or not anyone listens
        (docs/runs.md); refusals raise here, before it runs.

        ``on_busy="enqueue"``: the message waits in the session's queue and runs
        after the turns before it; the handle joins it once it runs here.
        ``interrupt`` and ``rollback``: as `stream`. When the run ends, the
        session's next queued message runs in ``tasks``; ``started`` is told of each.
        """
        if on_busy == "enqueue":
            who = Principal.of(principal)
            if session_id is None:
                session_id = await self.create_session(who)
            queued = await self.enqueue(
                message,
                session_id,
                who,
                base_revision=base_revision,
                on_pending_pause=on_pending_pause,
            )
            waiting = self._waiting[queued] = RunHandle(queued, session_id)
            await self.run_queued(session_id, tasks, started)
            return waiting
        turn = self.stream(
            message,
            session_id,
            principal,
            base_revision=base_revision,
            on_pending_pause=on_pending_pause,
            on_busy=on_busy,
        )
        then = self._then_queued(tasks, started)
        who = Principal.of(principal)  # the session's owner, unless it may run anyone's
        owner = None if "*" in who.scopes else RunOwner(who.name)
        handle = await start_run(self, turn, tasks, owner, then=then)
        if handle.run_id is not None:
            handle.asked = QueuedTurn(
                handle.run_id, handle.session_id, who.name, who.name, who.scopes, message,
                on_pending_pause, self.clock(),
            )  # fmt: skip
        return self._driving(handle, tasks)

    async def start_resume(
        self,
        token: str | ResolvedPause,
        answer: Answer,
        principal: Principal | str = "local",
        *,
        tasks: TaskGroup,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
        started: Started | None = None,
    ) -> RunHandle:
        """Answer a pause and run its turn on in ``tasks``; refusals and the claim
        are decided before this returns. Then as `start`."""
        await self.open()
        if isinstance(token, str):
            token = await resolve(self.settlement, token, self.clock())
        pause = token.pause
        turn = self.resume_stream(token, answer, principal, status=status, args_digest=args_digest)
        owner = RunOwner(pause.principal, pause.audience, pause.pause_id)
        then = self._then_queued(tasks, started)
        return self._driving(await start_run(self, turn, tasks, owner, then=then), tasks)

    async def enqueue(
        self,
        message: str,
        session_id: str,
        principal: Principal | str = "local",
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
    ) -> str:
        """Queue ``message``, refusals first; its run's id. It runs when a worker takes
        it (`run_queued`, or a sweep; docs/runs.md)."""
        await self.open()
        who = Principal.of(principal)
        return await enqueue(self, who, message, session_id, base_revision, on_pending_pause)

    async def run_queued(
        self, session_id: str, tasks: TaskGroup, started: Started | None = None
    ) -> RunHandle | None:
        """Run the session's next queued message in ``tasks`` if the session is free,
        then each one after it; ``None`` when none was taken."""
        await self.open()
        return await run_next(self, session_id, tasks, self._taken, started, self._waiting)

    def _taken(self, taken: TakenTurn) -> AsyncGenerator[Event, None]:
        queued, held = taken.turn, (taken.start, taken.turn.run_id)
        who = Principal(queued.principal, queued.scopes)
        turn = first_turn(self, who, queued.message, queued.session_id, held=held)
        return self._traced(turn, who, queued.session_id)

    def _then_queued(self, tasks: TaskGroup, started: Started | None) -> Then:
        async def then(ended: RunHandle) -> None:
            await self.run_queued(ended.session_id, tasks, started)

        return then

    def _driving(self, handle: RunHandle, tasks: TaskGroup) -> RunHandle:
        self.started_runs.add(handle, tasks)
        return handle

    async def get_run(self, run_id: str, principal: Principal | str = "local") -> RunRecord:
        """A run ``principal`` may see (docs/runs.md); `RunNotFound` otherwise."""
        await self.open()
        return await visible_run(self, run_id, Principal.of(principal))

    async def cancel_run(self, run_id: str, principal: Principal | str = "local") -> RunRecord:
        """Cancel a run started here or on any worker, as it reads once cancelled: it
        publishes nothing, and a resume's pause is ``abandoned``; a run started here
        stops at its next step. `RunNotRunning` when it already ended or settled."""
        await self.open()
        cancelled = await cancel_run(self, run_id, Principal.of(principal))
        started = self.started_runs.handles.get(run_id)
        if started is not None:
            started.stop()
        return cancelled
