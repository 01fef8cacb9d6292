"""The agents one service hosts, sharing one store and so its token secret.

A session is routed to the agent that created it, and a resume to the agent of the pause
its token names, on any worker.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import anyio

from symfonic.agent.agent import SymfonicAgent
from symfonic.agent.retention import Retention, prune_run_events
from symfonic.core.contracts.errors import (
    ConfigurationError,
    PauseNotFound,
    SessionNotFound,
    UnknownAgent,
)
from symfonic.core.contracts.store import PruneReport, Store, SweepReport
from symfonic.storage import open_store
from symfonic.turns.resolve import ResolvedPause, resolve_row

logger = logging.getLogger("symfonic.http")


@dataclass
class Draining:
    """A stopping worker: the sessions whose next queued message it left to the others,
    how many of those it handed over, and the background runs it cancelled or handed back."""

    sessions: set[str] = field(default_factory=set)
    queued: int = 0
    runs_cancelled: int = 0
    runs_handed: int = 0


class ServiceHost:
    def __init__(self, agents: Sequence[SymfonicAgent], store: str | Store | None = None) -> None:
        if not agents:
            raise ConfigurationError("a service needs at least one agent")
        self.agents: dict[str, SymfonicAgent] = {}
        for agent in agents:
            if agent.name in self.agents:
                raise ConfigurationError(f"two agents are named {agent.name!r}")
            self.agents[agent.name] = agent
        self.default_agent = agents[0].name
        self._store_arg = store
        self._store: Store | None = None
        self._owns_store = False
        self._lock = anyio.Lock()
        self.draining: Draining | None = None

    def __repr__(self) -> str:
        return f"ServiceHost(agents={sorted(self.agents)!r})"

    @property
    def store(self) -> Store:
        if self._store is None:
            raise ConfigurationError("the service host is not open")
        return self._store

    @property
    def is_open(self) -> bool:
        return self._store is not None

    async def open(self) -> None:
        """Open one store and hand it to every agent; idempotent."""
        async with self._lock:
            if self._store is not None:
                return
            first, *others = self.agents.values()
            if self._store_arg is None:
                await first.open()
                store = first.store
            elif isinstance(self._store_arg, str):
                store = open_store(self._store_arg)
                await store.__aenter__()
                self._owns_store = True
            else:
                store = self._store_arg
            try:
                for agent in others if self._store_arg is None else [first, *others]:
                    agent.use_store(store)
                    await agent.open()
            except BaseException:
                await self._close(store)
                raise
            self._store = store

    async def aclose(self) -> None:
        async with self._lock:
            if self._store is not None:
                await self._close(self._store)
            self._store = None

    def drain(self) -> Draining:
        """Stop: readiness says so, and no queued message starts here any more."""
        if self.draining is None:
            self.draining = Draining()
            for agent in self.agents.values():
                agent.settlement.left_for_others = self.draining.sessions
        return self.draining

    async def hand_over(self) -> None:
        """Leave the queued messages this stopping worker did not start to the next
        sweep of any other worker, at once rather than once two sweeps agree."""
        draining = self.draining
        if draining is None or not draining.sessions:
            return
        try:
            now = self.agents[self.default_agent].clock()
            draining.queued = await self.store.hand_over_queues(sorted(draining.sessions), now)
        except Exception as error:  # the sweeps take them all the same, a pass later
            logger.warning("could not hand over the queued messages left here: %s", error)

    async def _close(self, store: Store) -> None:
        # The first agent may own the store: close the others before it.
        for agent in reversed(self.agents.values()):
            await agent.aclose()
        if self._owns_store:
            await store.__aexit__(None, None, None)
        self._owns_store = False

    async def sweep(self, expiring_lead: float | None = None) -> SweepReport:
        """Expire stale pauses and abandon lapsed claims, on the default agent's clock.

        With ``expiring_lead`` (seconds), first owe ``pause.expiring`` for the
        pending pauses that near their expiry, before any of them is expired.
        """
        agent = self.agents[self.default_agent]
        if expiring_lead is not None:
            await agent.open()
            await self.store.announce_expiring(agent.clock(), expiring_lead)
        return await agent.sweep()

    async def prune(self, retention: Retention) -> PruneReport:
        """Delete the sessions ``retention`` no longer keeps, on the default agent's clock."""
        return await self.agents[self.default_agent].prune(retention)

    async def prune_run_events(self, ttl: timedelta) -> int:
        """Delete the runs that ended more than ``ttl`` ago, on the default agent's clock."""
        agent = self.agents[self.default_agent]
        await agent.open()
        return await prune_run_events(self.store, ttl, agent.clock())

    def agent(self, name: str | None) -> SymfonicAgent:
        """The agent called ``name`` (default: the first)."""
        chosen = name or self.default_agent
        if chosen not in self.agents:
            raise UnknownAgent(
                f"no agent named {chosen!r}; this service hosts {', '.join(sorted(self.agents))}"
            )
        return self.agents[chosen]

    async def agent_of_session(self, session_id: str) -> SymfonicAgent:
        session = await self.store.get_session(session_id)
        if session is None or session.agent not in self.agents:
            raise SessionNotFound(f"no session {session_id!r}", session_id=session_id)
        return self.agents[session.agent]

    async def viewer_of_session(self, session_id: str) -> SymfonicAgent:
        """The hosted agent that may show a session: its own, or for a delegate's
        session, the agent of the session that delegated to it (on the same store)."""
        session = await self.store.get_session(session_id)
        seen: set[str] = set()
        while session is not None and session.agent not in self.agents:
            parent = session.metadata.get("parent_session_id")
            if not isinstance(parent, str) or parent in seen:
                break
            seen.add(parent)
            session = await self.store.get_session(parent)
        if session is None or session.agent not in self.agents:
            raise SessionNotFound(f"no session {session_id!r}", session_id=session_id)
        return self.agents[session.agent]

    async def resolve(self, token: str) -> tuple[SymfonicAgent, ResolvedPause]:
        """The pause the token names, as its row says, and its agent; none is a 404.

        The token is verified here, once; the resolved pause goes on to that
        agent's resume, which starts from it.
        """
        signer = self.agents[self.default_agent].settlement.signer
        resolved = await resolve_row(signer, self.store, token)
        agent = self.agents.get(resolved.pause.agent)
        if agent is None:
            raise PauseNotFound("the token does not name a pause")
        # The row was read: whatever the pause's own agent kept of it is not needed.
        agent.settlement.recent.take(resolved.pause.pause_id)
        return agent, resolved
