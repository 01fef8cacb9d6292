"""Another agent as a tool: its first turn runs once, in a session of its own, and its pause is
recorded beside one of the caller's, the only one a person sees and answers.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from symfonic.core.contracts.errors import (
    ConfigurationError,
    ModelError,
    SessionNotFound,
    UnusableFinal,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import RunRequest, SessionRecord, Store
from symfonic.core.contracts.types import (
    KernelDone,
    KernelResult,
    PendingInteraction,
    RawEvent,
    StopReason,
)
from symfonic.kernel.delegates import Delegated, DelegatedCall
from symfonic.kernel.limits import Limits
from symfonic.kernel.loop import Kernel
from symfonic.turns.budget import IssuerScope
from symfonic.turns.lease import Heartbeats
from symfonic.turns.settlement import Settlement
from symfonic.turns.started_turn import MarkerLease, StartedTurn

DEFAULT_DELEGATION_DEPTH = 3


class DelegationHost(Protocol):
    """Where a chain of delegates runs: the calling agent's store, signer, clock and
    telemetry."""

    claim_lease: float
    run_lease: float
    clock: Callable[[], datetime]

    @property
    def telemetry(self) -> bool: ...

    @property
    def store(self) -> Store: ...

    @property
    def settlement(self) -> Settlement: ...


class DelegateAgent(Protocol):
    """What running another agent's turn needs of it: its name, limits and model loop."""

    name: str
    limits: Limits

    @property
    def delegates(self) -> Sequence[DelegateTool]: ...

    def kernel(
        self,
        session_id: str,
        plan: Limits | None = None,
        *,
        principal: Principal | None = None,
        host: DelegationHost | None = None,
    ) -> Kernel: ...

    def context(self, history: Sequence[BaseMessage]) -> list[BaseMessage]: ...


class _Task(BaseModel):
    task: str = Field(description="The task for the other agent, in plain words.")


class DelegateTool:
    """An agent offered to other agents as a tool; made by ``SymfonicAgent.as_tool``."""

    def __init__(self, agent: DelegateAgent, name: str, description: str) -> None:
        if not name:
            raise ConfigurationError("a delegate tool needs a name")
        self.agent = agent
        self.name = name
        self.description = description

    def __repr__(self) -> str:
        return f"DelegateTool(name={self.name!r}, agent={self.agent.name!r})"

    def binding(self) -> BaseTool:
        """The model-facing tool: a task in, the other agent's final answer out."""

        def never_called(task: str) -> str:
            raise RuntimeError(f"{self.name} is run by the kernel as a delegate")

        return StructuredTool.from_function(
            func=never_called, name=self.name, description=self.description, args_schema=_Task
        )

    def bound(self, host: DelegationHost) -> BoundDelegate:
        return BoundDelegate(self, host)


def _height(tool: DelegateTool, path: tuple[str, ...]) -> int:
    """How many delegations deep ``tool``'s agent goes; refuses a cycle by agent name."""
    name = tool.agent.name
    if name in path:
        chain = " → ".join((*path, name))
        raise ConfigurationError(
            f"agents may not delegate in a cycle, and agent {name!r} would reach itself: {chain}"
        )
    below = [_height(inner, (*path, name)) for inner in tool.agent.delegates]
    return 1 + max(below, default=0)


def check_delegates(name: str, delegates: Sequence[DelegateTool], max_depth: int) -> None:
    """Refuse a cycle between agents, or a chain of delegations deeper than ``max_depth``."""
    if max_depth < 1:
        raise ConfigurationError("max_delegation_depth must be at least 1")
    height = max((_height(tool, (name,)) for tool in delegates), default=0)
    if height > max_depth:
        raise ConfigurationError(
            f"agent {name!r} delegates {height} levels deep, more than its "
            f"max_delegation_depth of {max_depth}"
        )


def delegated_interaction(
    tool: DelegateTool, call_id: str, args: dict[str, Any], asked: PendingInteraction, pause_id: str
) -> PendingInteraction:
    """The caller's stop: the delegate's question, asked of the caller's delegate call."""
    return PendingInteraction(
        kind=asked.kind,
        tool_call_id=call_id,
        tool_name=tool.name,
        args=args,
        query=asked.query,
        response_schema=asked.response_schema,
        audience=asked.audience,
        # Down a chain of delegates, the one that asked is named.
        sub_agent=asked.sub_agent or tool.agent.name,
        delegated_pause_id=pause_id,
        # What the person approves is the delegate's gated call, not the task given to it.
        args_digest=asked.args_digest,
        escalate=asked.escalate,
        approvals_required=asked.approvals_required,
        allow_requester=asked.allow_requester,
        server=asked.server,
    )


def child_plan(agent: DelegateAgent, rounds_left: int) -> Limits:
    """The delegate's limits, its tool rounds capped by what the caller has left."""
    return replace(
        agent.limits, max_tool_rounds=max(1, min(agent.limits.max_tool_rounds, rounds_left))
    )


def failed_observation(tool: DelegateTool, error: Exception) -> str:
    return f"error: the agent {tool.agent.name} could not finish the task: {error}"


async def kernel_result(events: AsyncGenerator[RawEvent, None]) -> KernelResult:
    """Drain a delegate's kernel events to its done result; its events stay internal."""
    async with aclosing(events) as stream:
        async for raw in stream:
            if isinstance(raw, KernelDone):
                return raw.result
    raise ModelError("the delegate's turn ended without a result")


class BoundDelegate:
    """A delegate tool bound to the store of the turn that calls it."""

    def __init__(self, tool: DelegateTool, host: DelegationHost) -> None:
        self.tool = tool
        self.host = host

    async def delegate(self, call: DelegatedCall) -> Delegated:
        """Run the delegate's first turn on the call's task, in a new session.

        It ends as a root's first turn does (`StartedTurn`), at revision 0
        of its session; a turn that cannot finish is an error observation.
        """
        if call.rounds_left < 1:
            return Delegated(
                f"error: no tool rounds are left for the agent {self.tool.agent.name}", ok=False
            )
        turn = await self._start(call)
        host, agent = self.host, self.tool.agent
        lease = MarkerLease(
            host.store, turn.session_id, turn.run_id, seconds=host.run_lease, clock=host.clock
        )
        try:
            async with Heartbeats(lease.renew_if_due, lease.interval):
                kernel = agent.kernel(
                    turn.session_id,
                    child_plan(agent, call.rounds_left),
                    principal=call.principal,
                    host=host,
                )
                task = str(call.args.get("task") or "")
                try:
                    result = await kernel_result(
                        kernel.run(agent.context(()), [HumanMessage(content=task)])
                    )
                except ModelError as error:
                    return Delegated(failed_observation(self.tool, error), ok=False)
                return await self._settle(call, turn, result)
        finally:
            await turn.end()

    async def _start(self, call: DelegatedCall) -> StartedTurn:
        """The delegate's new session, its run marker set, owned by the caller's owner."""
        session_id, owner = await self._child_session(call)
        run_id = uuid.uuid4().hex
        now = self.host.clock()
        lease_until = now + timedelta(seconds=self.host.run_lease)
        request = RunRequest(session_id, run_id, now=now, lease_until=lease_until)
        if await self.host.store.begin_run(request) is None:
            raise SessionNotFound("the delegate's new session could not be started")
        scope = IssuerScope(owner, self.tool.agent.name)
        return StartedTurn(
            self.host.settlement,
            session_id,
            run_id,
            scope,
            0,
            call.principal,
            parent_session_id=call.session_id,
        )

    async def _settle(
        self, call: DelegatedCall, turn: StartedTurn, result: KernelResult
    ) -> Delegated:
        """The delegate's pause recorded as the caller's stop, or its answer published."""
        if result.stop_reason is StopReason.PAUSED:
            assert result.interaction is not None
            # Expires a claim lease after the caller's pause would, which is recorded after it.
            later = self.host.clock() + timedelta(seconds=self.host.claim_lease)
            event = await turn.pause(result, now=later)
            stop = delegated_interaction(
                self.tool, call.tool_call_id, dict(call.args), result.interaction, event.pause_id
            )
            return Delegated("", ok=True, rounds=result.rounds, interaction=stop)
        try:
            answer, _ = await turn.publish(result)
        except UnusableFinal as unusable:
            return Delegated(failed_observation(self.tool, unusable), False, result.rounds)
        return Delegated(answer, ok=True, rounds=result.rounds)

    async def _child_session(self, call: DelegatedCall) -> tuple[str, str]:
        """A new session for the delegate, owned by the calling session's owner."""
        parent = await self.host.store.get_session(call.session_id)
        if parent is None:
            raise SessionNotFound(f"no session {call.session_id!r}", session_id=call.session_id)
        session_id = uuid.uuid4().hex
        await self.host.store.create_session(
            SessionRecord(
                session_id=session_id,
                principal=parent.principal,
                agent=self.tool.agent.name,
                revision=0,
                metadata={
                    "parent_session_id": call.session_id,
                    "parent_tool_call_id": call.tool_call_id,
                    "delegated_by": parent.agent,
                },
                created_at=self.host.clock(),
            )
        )
        return session_id, parent.principal
