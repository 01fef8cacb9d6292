"""The runs an agent started and still drives, each stopped as soon as the store says another
worker cancelled it: one watch of the store per agent, held while any of them runs.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from contextlib import aclosing

import anyio
import anyio.abc

from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.store import Store
from symfonic.turns.background import RunHandle

logger = logging.getLogger("symfonic")

RETRY_DELAY = 1.0
_STOPPED = frozenset({RunState.CANCELLED, RunState.FORGOTTEN})


class StartedRuns:
    """This agent's running runs by id, watched for a cancel from any worker."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self._store = store
        self.handles: weakref.WeakValueDictionary[str, RunHandle] = weakref.WeakValueDictionary()
        self._watching: anyio.CancelScope | None = None
        # Off where a server watches the runs it starts itself, on one connection for all.
        self.watch = True

    def add(self, handle: RunHandle, tasks: anyio.abc.TaskGroup) -> None:
        """Watch ``handle``'s run until it ends; the watch starts in ``tasks`` if none runs."""
        if handle.run_id is None or handle.done:
            return
        self.handles[handle.run_id] = handle
        if not self.watch:
            return
        if self._watching is None:
            self._watching = anyio.CancelScope()
            tasks.start_soon(self._watch, self._watching)
        tasks.start_soon(self._forget_when_done, handle)

    async def _forget_when_done(self, handle: RunHandle) -> None:
        await handle.wait()
        if not any(not each.done for each in self.handles.values()) and self._watching:
            self._watching.cancel()

    async def _watch(self, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                while True:
                    try:
                        await self._stop_cancelled()
                    except StoreUnavailable as error:
                        logger.warning("the watch of this agent's runs was lost: %s", error)
                        await anyio.sleep(RETRY_DELAY)
        finally:
            if self._watching is scope:
                self._watching = None

    async def _stop_cancelled(self) -> None:
        listening = False
        async with aclosing(self._store().watch_run_events()) as watch:
            async for run_ids in watch:
                # What was cancelled before the watch listened was heard by nobody.
                named = set(run_ids) if listening else set(self.handles.keys())
                listening = True
                for run_id in named & set(self.handles.keys()):
                    record = await self._store().run_record(run_id)
                    handle = self.handles.get(run_id)
                    if handle is not None and (record is None or record.state in _STOPPED):
                        handle.stop()
