"""The heartbeat beside a tool call: the lease holder is called every interval while the tool
runs, each beat timed from the end of the last. A failed beat never interrupts the tool; its
error is raised once the tool is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType

import anyio

Heartbeat = Callable[[], Awaitable[None]]


class Heartbeats:
    """``async with Heartbeats(heartbeat, interval):`` around the work to keep company."""

    def __init__(self, heartbeat: Heartbeat, interval: float) -> None:
        self._heartbeat = heartbeat
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._beating: asyncio.Task[None] | None = None
        self._stopped = False
        self._failure: Exception | None = None

    async def __aenter__(self) -> Heartbeats:
        self._arm()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        if self._beating is not None and not self._beating.done():
            with anyio.CancelScope(shield=True):
                await self._beating

    def raise_failure(self) -> None:
        """Raise the error of the beat that failed, if one did."""
        if self._failure is not None:
            raise self._failure

    def _arm(self) -> None:
        self._timer = self._loop.call_later(self._interval, self._due)

    def _due(self) -> None:
        self._beating = self._loop.create_task(self._beat())

    async def _beat(self) -> None:
        try:
            await self._heartbeat()
        except Exception as error:
            self._failure = error
            return
        if not self._stopped:
            self._arm()
