"""An agent's store: opened once, on first use, owned or shared, with its token signer and
settlement built from the store's own secret, so any worker on the store verifies any token.
"""

from __future__ import annotations

from contextlib import suppress

import anyio

from symfonic.capabilities.human.tokens import TokenSigner
from symfonic.core.contracts.errors import ConfigurationError, StoreUnavailable
from symfonic.core.contracts.store import Store
from symfonic.core.telemetry.instruments import recording
from symfonic.storage import open_store, store_url
from symfonic.turns.settlement import Settlement


class OpenedStore:
    """The store an agent runs on, and the settlement built on it once it is open."""

    def __init__(self, store: str | Store | None, *, pause_ttl: float) -> None:
        self.pause_ttl = float(pause_ttl)
        self._store_arg = store
        self._store: Store | None = None
        self._settlement: Settlement | None = None
        self._owns_store = False
        self._recording = False
        self._open_lock = anyio.Lock()

    async def open(self) -> None:
        """Open the store (and its pool) if it is not open yet; idempotent."""
        if self._settlement is not None:
            return  # every call opens first; once open, that costs no lock
        async with self._open_lock:
            if self._settlement is not None:
                return
            if self._store_arg is None or isinstance(self._store_arg, str):
                store = open_store(store_url(self._store_arg))
                await store.__aenter__()
                self._owns_store = True
            else:
                store = self._store_arg
            # Decided once: an SDK must be installed before the agent opens
            # (docs/observability.md).
            self._recording = recording()
            self._store = store
            signer = TokenSigner(await store.signing_secret())
            self._settlement = Settlement(store, signer, pause_ttl=self.pause_ttl)

    async def close_store(self) -> None:
        """Close the store if the agent opened it; it opens again on next use."""
        async with self._open_lock:
            if self._store is not None and self._owns_store:
                await _seal_what_is_left(self._store)
                await self._store.__aexit__(None, None, None)
            self._store, self._settlement, self._owns_store = None, None, False

    def use_store(self, store: Store) -> None:
        """Share an opened store (a server hosting several agents); before first use."""
        if self._store is not None:
            raise ConfigurationError("use_store must be called before the agent is opened")
        self._store_arg = store

    @property
    def declared_store(self) -> str | Store | None:
        """The ``store`` the agent was built with (or handed by ``use_store``).

        ``None`` means the agent has no store of its own: ``SYMFONIC_STORE``,
        else the embedded default, decides when it opens. A server choosing one
        store for several agents reads this before any of them is opened.
        """
        return self._store_arg

    @property
    def store(self) -> Store:
        if self._store is None:
            raise ConfigurationError(
                "the agent is not open; use 'async with agent' or 'await agent.open()'"
            )
        return self._store

    @property
    def settlement(self) -> Settlement:
        """The writes this agent's turns end in, on its store."""
        if self._settlement is None:
            raise ConfigurationError("the agent is not open")
        return self._settlement

    @property
    def telemetry(self) -> bool:
        """Whether this agent traces and measures its turns: an SDK was recording when it
        opened. A delegate's turns follow the agent whose store they run on."""
        return self._recording


async def _seal_what_is_left(store: Store) -> None:
    # An agent run without the HTTP service has no sealer of its own: its records take their
    # place in the audit chain when it closes, or at the next seal by any worker.
    with anyio.move_on_after(5), suppress(StoreUnavailable):
        await store.seal_audit()
