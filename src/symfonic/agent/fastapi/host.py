"""The agents one service hosts, sharing one store.

A session is bound to the agent that created it (its selected root); requests
that name a session are routed to that agent, whichever worker receives them.
"""

from __future__ import annotations

from collections.abc import Sequence

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.errors import ConfigurationError, SessionNotFound
from symfonic.core.contracts.store import Store
from symfonic.storage import open_store


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

    @property
    def store(self) -> Store:
        if self._store is None:
            raise ConfigurationError("the service host is not open")
        return self._store

    async def open(self) -> None:
        """Open one store and hand it to every agent."""
        if isinstance(self._store_arg, str) or self._store_arg is None:
            self._store = open_store(self._store_arg)
            await self._store.__aenter__()
            self._owns_store = True
        else:
            self._store = self._store_arg
        for agent in self.agents.values():
            agent.use_store(self._store)
            await agent.open()

    async def aclose(self) -> None:
        for agent in self.agents.values():
            await agent.aclose()
        if self._store is not None and self._owns_store:
            await self._store.__aexit__(None, None, None)
        self._store = None

    def agent(self, name: str | None) -> SymfonicAgent:
        """The agent called ``name`` (default: the first); unknown names are a 404."""
        chosen = name or self.default_agent
        if chosen not in self.agents:
            raise SessionNotFound(f"no agent named {chosen!r}; this service hosts {sorted(self.agents)}")
        return self.agents[chosen]

    async def agent_of_session(self, session_id: str) -> SymfonicAgent:
        session = await self.store.get_session(session_id)
        if session is None or session.agent not in self.agents:
            raise SessionNotFound(f"no session {session_id!r}", session_id=session_id)
        return self.agents[session.agent]
