"""The symfonic side: ``SymfonicAgent`` with an approval gate on ``send_payment``.

The same cycle as LangGraph's, through symfonic's public API: ``agent.run`` ends
paused, ``agent.resume(token, {"decision": "approve"})`` runs the tool and
completes. The model is the LangGraph side's own class
(:class:`bench.workloads.scripted_model.ScriptedToolModel`); history is seeded
with ``agent.seed_history``; the PostgreSQL pool is sized to the concurrency
(``SYMFONIC_POOL_SIZE``) unless the environment says otherwise.
``symfonic+normal`` is the same cycle on SQLite with ``?synchronous=normal``:
beside ``symfonic`` (FULL) in one run, the price of syncing every commit.
A tree whose audit records are sealed after commit runs its sealer beside the
clients, every 0.5 s as a worker does, and once at close, so its cost is counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
from contextlib import AsyncExitStack
from typing import Any

import symfonic
from bench.history import TOOL_NAME, TOOL_RESULT, USER_MESSAGE
from bench.workloads.base import Workload, WorkloadError
from bench.workloads.scripted_model import ScriptedToolModel
from symfonic import SymfonicAgent

PRINCIPAL = "bench"


async def send_payment(amount: int, currency: str, invoice: str) -> str:
    """Send a payment to a supplier; a person must approve it first."""
    return TOOL_RESULT


class SymfonicWorkload(Workload):
    system = "symfonic"

    _stack: AsyncExitStack | None = None
    _agent: Any = None
    # What the store URL adds on SQLite, and the synchronous level that gives.
    sqlite_options = ""
    synchronous = "symfonic's default (FULL)"

    async def open(self) -> None:
        if self.spec.store == "postgresql":
            os.environ.setdefault("SYMFONIC_POOL_SIZE", str(max(1, self.spec.concurrency)))
        store = self.spec.sqlite_url if self.spec.store == "sqlite" else self.spec.location
        if self.spec.store == "sqlite":
            store += self.sqlite_options
            # The SQLite probe holds a read snapshot across the timed section, so no
            # checkpoint can empty the WAL then (bench.probes.sqlite_probe). The store's
            # checkpoint would wait its bounded time for that reader alone, once every
            # few hundred commits; the other systems' passive checkpoints never wait.
            # Giving up at once keeps the probe's side effect the same for every system.
            _checkpoints_give_up_at_once()
        agent = SymfonicAgent(
            name="bench",
            model=ScriptedToolModel(),
            tools=[send_payment],
            approval={TOOL_NAME},
            store=store,
        )
        self._stack = AsyncExitStack()
        self._agent = await self._stack.enter_async_context(agent)
        store = self._agent.store
        if hasattr(store, "seal_audit"):
            sealer = asyncio.create_task(_seal_periodically(store))
            self._stack.push_async_callback(store.seal_audit)
            self._stack.push_async_callback(_stopped, sealer)

    async def add_sessions(self, count: int) -> list[str]:
        bodies = [b.as_dict() for b in self.spec.history]
        keys: list[str] = []
        for _ in range(count):
            session_id = await self._agent.create_session(principal=PRINCIPAL)
            if bodies:
                await self._agent.seed_history(session_id, bodies)
            keys.append(session_id)
        return keys

    async def pause(self, session: str) -> Any:
        result = await self._agent.run(
            message=USER_MESSAGE, session_id=session, principal=PRINCIPAL
        )
        if result.status != "paused":
            raise WorkloadError(f"symfonic turn on {session} ended {result.status!r}")
        return result.pause.token

    async def resume(self, session: str, handle: Any) -> None:
        result = await self._agent.resume(handle, {"decision": "approve"}, principal=PRINCIPAL)
        if result.status != "complete":
            raise WorkloadError(f"symfonic resume on {session} ended {result.status!r}")

    async def close(self) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._stack = self._agent = None

    def settings(self) -> dict[str, Any]:
        # Which tree ran: the installed one, or a --baseline's.
        package = {"package": os.path.dirname(symfonic.__file__)}
        if self.spec.store == "sqlite":
            return package | {"sqlite_synchronous": self.synchronous}
        return package | {"pool_size": os.environ.get("SYMFONIC_POOL_SIZE", "symfonic default")}


async def _seal_periodically(store: Any) -> None:
    """The HTTP worker's audit sealer (`symfonic.server.service.sweeper`), without HTTP."""
    while True:
        await asyncio.sleep(0.5)
        await store.seal_audit()


async def _stopped(sealer: asyncio.Task[None]) -> None:
    # Suppressed here, not in the task: a task cancelled before it first ran never
    # enters its own body, so awaiting it raises all the same.
    sealer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sealer


def _checkpoints_give_up_at_once() -> None:
    """The store's checkpoint wait set to nothing, wherever this tree keeps it."""
    for name in ("symfonic.storage.sqlite_checkpoints", "symfonic.storage.sqlite"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "CHECKPOINT_WAIT_MS"):
            module.CHECKPOINT_WAIT_MS = 0


class SymfonicNormalWorkload(SymfonicWorkload):
    system = "symfonic+normal"
    sqlite_options = "?synchronous=normal"
    synchronous = "NORMAL (?synchronous=normal)"
