"""Keeping a hold alive while its turn runs: renewed on events and on a heartbeat for the turn's
whole life (the model thinking, a tool running), and bounding how long a claim's writes may
wait for a store out of reach.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from types import TracebackType
from typing import TypeVar

import anyio

from symfonic.core.contracts.errors import PauseAbandoned, StoreCannotWrite, StoreUnavailable
from symfonic.core.contracts.store import Store

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The part of the lease kept back from retries: the last attempt must finish,
# and another worker's sweeper, whose clock may run a little ahead, must not
# see the lease run out before it does.
RETRY_MARGIN = 0.1
# Backoff between attempts while the store is out of reach, in seconds.
FIRST_RETRY_DELAY = 0.05
LONGEST_RETRY_DELAY = 1.0


class Heartbeats:
    """``async with Heartbeats(renew, interval):`` for the life of a turn: ``renew`` is called
    every ``interval``, each beat timed from the end of the last, so a hold is lost only with
    its worker. A beat is a timer on the event loop and gets a task only when it falls due;
    a failed beat is logged and the next one is still timed."""

    def __init__(self, renew: Callable[[], Awaitable[None]], interval: float) -> None:
        self._renew = renew
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._beating: asyncio.Task[None] | None = None
        self._stopped = False

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

    def _arm(self) -> None:
        if not self._stopped:
            self._timer = self._loop.call_later(self._interval, self._due)

    def _due(self) -> None:
        self._beating = self._loop.create_task(self._beat())

    async def _beat(self) -> None:
        try:
            await self._renew()
        except Exception as error:
            logger.warning("a turn's hold could not be renewed on its heartbeat: %s", error)
        self._arm()


class ClaimLease:
    def __init__(
        self,
        store: Store,
        session_id: str,
        claim_id: str,
        *,
        seconds: float,
        clock: Callable[[], datetime],
        renewed: datetime | None = None,
    ) -> None:
        """``renewed``: when the lease the claim wrote was counted from (default: now)."""
        self._store = store
        self.session_id = session_id
        self.claim_id = claim_id
        self._length = timedelta(seconds=seconds)
        self.length = self._length
        self._clock = clock
        self._renewed = clock() if renewed is None else renewed
        self._lost = False
        self.interval = seconds / 3

    def until(self) -> datetime:
        return self._clock() + self._length

    def deadline(self) -> datetime:
        """When the lease the row holds runs out, as far as this turn knows it was written."""
        return self._renewed + self._length

    def _window(self) -> float:
        """Seconds left for this claim's writes: up to the margin before the deadline."""
        stop = self.deadline() - self._length * RETRY_MARGIN
        return (stop - self._clock()).total_seconds()

    async def renew_if_due(self) -> None:
        """Renew once a third of the lease has passed; cheap to call on every event.

        Raises `StoreCannotWrite` once the store has refused a write for a
        lasting reason since its last commit: whatever the turn did next could not
        be recorded.
        """
        refused = self._store.write_failure
        if refused is not None:
            raise StoreCannotWrite(
                f"the store cannot write ({refused}); this resume stops before running "
                "anything more",
                reason=refused,
            )
        now = self._clock()
        if not self._lost and now - self._renewed >= self._length / 3:
            try:
                await self._renew(now)
            except StoreCannotWrite:
                raise
            except StoreUnavailable as error:
                if self._window() <= 0:
                    raise PauseAbandoned(
                        "this resume's claim could not be renewed before its lease ran out; "
                        "nothing will be published"
                    ) from error
                # The lease still holds; the next event or heartbeat tries again.
                logger.warning("could not renew a claim's lease: %s", error)
        if self._lost:
            raise PauseAbandoned(
                "this resume's claim lapsed while the turn ran; nothing will be published"
            )

    async def renew_now(self) -> None:
        """Renew now, while a tool runs; a lost claim is raised at the next ``renew_if_due``."""
        try:
            await self._renew(self._clock())
        except StoreUnavailable as error:
            # The next heartbeat or event tries again; the lease has two thirds left.
            logger.warning("could not renew a claim's lease: %s", error)

    async def retry_write(self, write: Callable[[], Awaitable[T]]) -> T:
        """Run one of the claim's writes, retried while the store is out of reach.

        Only `StoreUnavailable` is retried: it means nothing was written
        (or, for a commit whose reply was lost, that the write took effect and
        the retry finds it done -- each write is keyed by this claim). A conflict,
        a lost claim, a store that cannot write (`StoreCannotWrite`, which
        lasts until someone frees the disk), anything else propagates at once. The
        first attempt always runs; the backoff is cut short so that the last
        attempt starts at the end of the window, none after it, and the last
        error is raised as it is.
        """
        stop_at = anyio.current_time() + self._window()
        attempt = 1
        while True:
            try:
                return await write()
            except StoreUnavailable as error:
                left = stop_at - anyio.current_time()
                if isinstance(error, StoreCannotWrite) or left <= 0:
                    raise
                # The driver's words stay here, in the log; they never reach a client.
                logger.warning(
                    "a claimed pause's write found the store out of reach (attempt %d); "
                    "retrying: %s",
                    attempt,
                    error,
                )
            backoff = min(FIRST_RETRY_DELAY * 2 ** (attempt - 1), LONGEST_RETRY_DELAY)
            await anyio.sleep(min(backoff + random.uniform(0, FIRST_RETRY_DELAY), left))
            attempt += 1

    async def _renew(self, now: datetime) -> None:
        held = await self._store.renew_claim(self.session_id, self.claim_id, now + self._length)
        self._lost = not held
        if held:
            self._renewed = now
