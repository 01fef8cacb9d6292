"""AG-UI threads as symfonic sessions, and which turn a run input asks for, decided before
anything runs or is claimed. A thread owned by another principal is `thread_not_found`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace

from ag_ui.core import ResumeEntry, RunAgentInput, TextPart, UserMessage

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.errors import (
    InvalidRunInput,
    PauseForbidden,
    PauseNotFound,
    RequestError,
    ResumeMismatch,
    StoreUnavailable,
    ThreadNotFound,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.run_events import RunRecord
from symfonic.core.contracts.store import PauseRecord, SessionRecord
from symfonic.core.contracts.types import AnswerStatus, Event, PauseState
from symfonic.server.agui.interrupts import answer_of, status_of
from symfonic.server.agui.snapshot import handed_note
from symfonic.server.service.host import ServiceHost
from symfonic.turns.resolve import ResolvedPause, resolve_row
from symfonic.turns.start import owned_session

THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
SETTLED = (PauseState.PUBLISHED, PauseState.SUPERSEDED)


@dataclass(frozen=True)
class NewTurn:
    agent: SymfonicAgent
    session_id: str
    message: str

    def events(self, principal: Principal) -> AsyncGenerator[Event, None]:
        return self.agent.stream(self.message, self.session_id, principal)


@dataclass(frozen=True)
class Resume:
    agent: SymfonicAgent
    resolved: ResolvedPause
    answer: object
    status: AnswerStatus

    @property
    def pause(self) -> PauseRecord:
        return self.resolved.pause

    def reread(self, pause: PauseRecord) -> Resume:
        """This resume, from the pause as read again (the token stays the one verified)."""
        return replace(self, resolved=ResolvedPause(self.resolved.token, pause))

    def events(self, principal: Principal) -> AsyncGenerator[Event, None]:
        return self.agent.resume_stream(self.resolved, self.answer, principal, status=self.status)


@dataclass(frozen=True)
class ShowState:
    """Nothing to run: the run answers with the thread's messages and open interrupt,
    after ``note`` (why an answer was not used) when there is one."""

    agent: SymfonicAgent
    session: SessionRecord
    note: str | None = None


@dataclass(frozen=True)
class Acknowledge:
    """A cancelled entry for an interrupt that is already dead: nothing to run."""

    pause: PauseRecord


@dataclass(frozen=True)
class Join:
    """The thread is running a turn whose events are kept: the run follows it."""

    agent: SymfonicAgent
    session: SessionRecord
    run: RunRecord


Plan = NewTurn | Resume | Acknowledge | ShowState | Join


NO_MESSAGE = "the run has no user message to answer and no resume entries"


def user_text(run_input: RunAgentInput) -> str:
    """The text of the last user message: the new turn's message."""
    for message in reversed(run_input.messages):
        if isinstance(message, UserMessage):
            content = message.content
            if isinstance(content, str):
                text = content
            else:
                text = "\n".join(p.text for p in content if isinstance(p, TextPart))
            if text.strip():
                return text
            raise InvalidRunInput("the last user message has no text")
    raise InvalidRunInput(NO_MESSAGE)


def has_user_message(run_input: RunAgentInput) -> bool:
    return any(isinstance(message, UserMessage) for message in run_input.messages)


def _agent_name(run_input: RunAgentInput) -> str | None:
    props = run_input.forwarded_props
    name = props.get("agent") if isinstance(props, dict) else None
    return name if isinstance(name, str) and name else None


async def thread_session(
    host: ServiceHost, principal: Principal, run_input: RunAgentInput, *, create: bool
) -> tuple[SymfonicAgent, SessionRecord]:
    """The thread's session and agent; an unknown thread is created only when ``create``."""
    thread_id = run_input.thread_id
    if not THREAD_ID.fullmatch(thread_id):
        raise InvalidRunInput(
            "a threadId is 1 to 64 letters, digits, '.', '_', ':' or '-', starting with a "
            "letter or digit"
        )
    unknown = ThreadNotFound(f"no thread {thread_id!r}")
    session = await host.store.get_session(thread_id)
    if session is None and create:
        try:
            await host.agent(_agent_name(run_input)).create_session(
                principal, {"agui": True}, session_id=thread_id
            )
        except StoreUnavailable:
            raise
        except Exception:
            # Another run created this thread first; whoever owns it now decides.
            if await host.store.get_session(thread_id) is None:
                raise
        session = await host.store.get_session(thread_id)
    if session is None or session.agent not in host.agents:
        raise unknown
    agent = host.agents[session.agent]
    try:
        return agent, await owned_session(agent, thread_id, principal)
    except RequestError:
        raise unknown from None


async def plan_resume(
    agent: SymfonicAgent, session: SessionRecord, principal: Principal, entries: list[ResumeEntry]
) -> Resume | Acknowledge | ShowState:
    store = agent.store
    if len(entries) != 1:
        raise ResumeMismatch(
            f"a thread has at most one open interrupt; this resume has {len(entries)} entries"
        )
    entry = entries[0]
    mismatch = ResumeMismatch("the resume entry names no interrupt of this thread")
    try:
        resolved = await resolve_row(agent.settlement.signer, store, entry.interrupt_id)
    except PauseNotFound:
        raise mismatch from None
    pause = resolved.pause
    if pause.session_id != session.session_id:
        raise mismatch
    agent.settlement.recent.take(pause.pause_id)
    now = agent.clock()
    open_pause = await store.open_pause(session.session_id)
    unanswered = (
        open_pause is not None
        and open_pause.pause_id != pause.pause_id
        and (open_pause.state is PauseState.CLAIMED or open_pause.answerable(now))
    )
    # An entry for an already answered interrupt is a replay, answered as before.
    if unanswered and pause.state not in SETTLED:
        raise ResumeMismatch("the resume does not answer this thread's open interrupt")
    dead = pause.state in (PauseState.EXPIRED, PauseState.ABANDONED) or (
        pause.state is PauseState.PENDING and not pause.answerable(now)
    )
    if dead and entry.status == "cancelled":
        if not principal.may_answer(pause):
            raise PauseForbidden(f"{principal.name} may not answer this interrupt")
        return Acknowledge(pause)
    handed = pause.readdressed is not None and pause.state is PauseState.PENDING
    if handed and not principal.may_answer(pause):
        # Handed to another audience since this front end was shown it: the
        # interrupt stays open for them, and this run says so.
        return ShowState(agent, session, handed_note(pause))
    status = status_of(pause, entry.status, entry.payload)
    return Resume(agent, resolved, answer_of(pause.kind, status, entry.payload), status)


async def interrupt_open(agent: SymfonicAgent, session_id: str) -> bool:
    """Whether the thread has an interrupt a new message must not go past."""
    paused = await agent.store.open_pause(session_id)
    return paused is not None and (
        paused.state is PauseState.CLAIMED or paused.answerable(agent.clock())
    )


async def running(agent: SymfonicAgent, session: SessionRecord) -> Join | None:
    """The thread's run in progress, when its events are kept, to join."""
    record = await agent.store.running_run(session.session_id, agent.clock())
    return None if record is None else Join(agent, session, record)


async def plan_run(host: ServiceHost, principal: Principal, run_input: RunAgentInput) -> Plan:
    """What this run input asks for; refusals raise before anything is written or claimed."""
    entries = list(run_input.resume or ())
    if not entries and not has_user_message(run_input):
        try:
            agent, session = await thread_session(host, principal, run_input, create=False)
        except ThreadNotFound:
            raise InvalidRunInput(NO_MESSAGE) from None
        return await running(agent, session) or ShowState(agent, session)
    if not entries:
        message = user_text(run_input)
        agent, session = await thread_session(host, principal, run_input, create=True)
        if joined := await running(agent, session):
            return joined
        if await interrupt_open(agent, session.session_id):
            return ShowState(agent, session)
        return NewTurn(agent, session.session_id, message)
    agent, session = await thread_session(host, principal, run_input, create=False)
    return await plan_resume(agent, session, principal, entries)
