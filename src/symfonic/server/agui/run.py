"""One AG-UI run, start to end: plan it, run the symfonic turn, project its events.

The stream is always well formed: a refusal is one `RUN_ERROR`, a started run ends with
exactly one `RUN_FINISHED` or `RUN_ERROR`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from ag_ui.core import BaseEvent, RunAgentInput

from symfonic.core.contracts.errors import (
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    RequestError,
    SessionBusy,
    SessionPaused,
    StoreUnavailable,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import (
    ApprovalRecordedEvent,
    Event,
    ResponseCompleteEvent,
    ToolResultEvent,
    TurnPausedEvent,
)
from symfonic.server.agui.joined import busy_join, joined
from symfonic.server.agui.mapping import RunProjection
from symfonic.server.agui.snapshot import thread_messages
from symfonic.server.agui.state import (
    CLAIM_WAIT,
    answered_elsewhere,
    claim_settled,
    projected,
    thread_state,
)
from symfonic.server.agui.threads import Acknowledge, Join, NewTurn, Resume, ShowState, plan_run
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.kept_stream import kept_stream
from symfonic.server.service.runs import WorkerRuns
from symfonic.turns.background import RunOwner
from symfonic.turns.outcomes import error_event

INTERRUPTS_PENDING = "interrupts_pending"


def refusal(error: RequestError) -> tuple[str, str]:
    """The ``RUN_ERROR`` code and message for a run refused before it started."""
    if isinstance(error, SessionPaused):
        return (
            INTERRUPTS_PENDING,
            "this thread is waiting for an answer to its interrupt; send a run whose "
            "resume answers it (or cancels it)",
        )
    return error.code, error.message


async def agui_run(
    host: ServiceHost,
    principal: Principal,
    run_input: RunAgentInput,
    *,
    runs: WorkerRuns | None = None,
    claim_wait: float = CLAIM_WAIT,
) -> AsyncGenerator[BaseEvent, None]:
    """The AG-UI events of one run; ``runs``: where its turn runs as a kept run (without
    one, or before its lifespan started, inside this request); ``claim_wait``: how long
    a resume waits on another's claim."""
    projection = RunProjection(run_input)
    runs = runs if runs is not None else WorkerRuns(host)
    try:
        plan = await plan_run(host, principal, run_input)
        if isinstance(plan, Acknowledge):
            for event in [*projection.start(), *projection.succeed()]:
                yield event
            return
        if isinstance(plan, ShowState):
            shown = thread_state(
                plan.agent, plan.session.session_id, projection, principal, plan.note
            )
            for event in await shown:
                yield event
            return
        async with aclosing(_planned(plan, principal, projection, runs, claim_wait)) as events:
            async for event in events:
                yield event
        if not projection.closed:
            for event in projection.fail("internal", "the run ended without an outcome"):
                yield event
    except RequestError as error:
        for event in projection.fail(*refusal(error)):
            yield event
    except Exception as error:
        if isinstance(error, StoreUnavailable) and not projection.started:
            raise  # nothing was claimed or started: the route answers 503
        failed = error_event(error)
        for event in projection.fail(failed.code, failed.message):
            yield event


async def _planned(
    plan: NewTurn | Resume | Join,
    principal: Principal,
    projection: RunProjection,
    runs: WorkerRuns,
    claim_wait: float,
) -> AsyncGenerator[BaseEvent, None]:
    """The run's turn: joined, or started; a new turn that finds its thread busy joins
    the turn it is busy with when that one's events are kept."""
    if isinstance(plan, Join):
        async with aclosing(joined(plan, principal, projection, runs)) as events:
            async for event in events:
                yield event
        return
    try:
        async with aclosing(_ran(plan, principal, projection, runs, claim_wait)) as events:
            async for event in events:
                yield event
        return
    except SessionBusy:
        if projection.started or not isinstance(plan, NewTurn):
            raise
        session = await plan.agent.store.get_session(plan.session_id)
        busy = None if session is None else await busy_join(plan.agent, session)
        if busy is None:
            raise
    async with aclosing(joined(busy, principal, projection, runs)) as events:
        async for event in events:
            yield event


def _source(
    plan: NewTurn | Resume, principal: Principal, runs: WorkerRuns
) -> AsyncGenerator[Event, None]:
    """The turn's symfonic events: a kept run this request listens to, when this worker
    runs background runs; else the turn inside this request."""
    events = plan.events(principal)
    if not runs.available:
        return events
    if isinstance(plan, NewTurn):
        return kept_stream(runs, plan.agent, events)
    pause = plan.pause
    owner = RunOwner(pause.principal, pause.audience, pause.pause_id)
    return kept_stream(runs, plan.agent, events, owner)


async def _ran(
    plan: NewTurn | Resume,
    principal: Principal,
    projection: RunProjection,
    runs: WorkerRuns,
    claim_wait: float,
) -> AsyncGenerator[BaseEvent, None]:
    """A new turn's events, or a resume's; a resume meeting a claim in flight waits once."""
    if isinstance(plan, NewTurn):
        async with aclosing(_source(plan, principal, runs)) as events:
            async for symfonic_event in events:
                for event in await projected(plan.agent, symfonic_event, projection, principal):
                    yield event
        return
    projection.answered_tool_call_id = plan.pause.tool_call_id
    waited = False
    while True:
        try:
            async with aclosing(_resumed(plan, principal, projection, runs)) as events:
                async for event in events:
                    yield event
            return
        except PauseAlreadyAnswered:
            if projection.started:
                raise
            for event in await answered_elsewhere(plan.agent, plan.pause, projection, principal):
                yield event
            return
        except PauseAlreadyClaimed:
            if projection.started or waited:
                raise
            settled = await claim_settled(plan.agent, plan.pause.pause_id, claim_wait)
            # The resume goes on from the pause as the claim left it.
            plan = plan if settled is None else plan.reread(settled)
            waited = True


async def _resumed(
    plan: Resume, principal: Principal, projection: RunProjection, runs: WorkerRuns
) -> AsyncGenerator[BaseEvent, None]:
    """The resumed turn's events, ending with the thread's messages.

    A replay (the same answer again, from a retry or a second tab) streams only
    its outcome: its answer is said first, and the snapshot after it replaces it
    and whatever the front end holds for the answered call (CopilotKit's own
    ``{"approved": true}``) with the thread's messages, the tool's real result
    among them, as in the run that carried the answer out.
    """
    ran = False
    async with aclosing(_source(plan, principal, runs)) as events:
        async for symfonic_event in events:
            ran = ran or isinstance(symfonic_event, ToolResultEvent)
            if isinstance(symfonic_event, ApprovalRecordedEvent) and not projection.started:
                # An approval counted toward a quorum starts no turn; the run still starts.
                counted = {"baseRevision": symfonic_event.base_revision, "resumed": False}
                for event in projection.start({"symfonic": counted}):
                    yield event
            if isinstance(symfonic_event, ResponseCompleteEvent | TurnPausedEvent):
                if not ran and isinstance(symfonic_event, ResponseCompleteEvent):
                    for event in projection.say(symfonic_event.answer):
                        yield event
                messages = await thread_messages(plan.agent.store, plan.pause.session_id)
                for event in projection.snapshot(messages):
                    yield event
            for event in await projected(plan.agent, symfonic_event, projection, principal):
                yield event
