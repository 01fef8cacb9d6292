"""The live pause feed of one worker: one watch of the store, while someone subscribes, and many
subscribers. A subscriber reads its snapshot only once the watch is established, so it misses no
change; one that falls behind gets a fresh snapshot.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass

import anyio
import anyio.abc

from symfonic.core.contracts.errors import FeedUnavailable, StoreUnavailable
from symfonic.core.contracts.pause_changes import PauseChange, PauseChangeLog
from symfonic.core.contracts.principal import Principal
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.pause_listing import PausePage, pause_page

logger = logging.getLogger("symfonic.http")

QUEUE_LIMIT = 256
REPLAY_LIMIT = 1000
# How long a new subscriber waits for the watch to be established.
LISTEN_TIMEOUT = 10.0
# Seconds before a lost watch is established again.
RETRY_DELAY = 1.0


@dataclass(frozen=True)
class FeedSnapshot:
    """The first page of the pauses a principal may answer now (pending, unexpired),
    at ``position``: a client asks ``GET /v1/pauses`` for the pages after it."""

    position: int
    page: PausePage


@dataclass(frozen=True)
class FeedChange:
    """One change a principal may see; ``answerable``: the pause is pending and
    unexpired as it is delivered, so a token may go with it."""

    change: PauseChange
    answerable: bool


FeedItem = FeedSnapshot | FeedChange


def sees(principal: Principal, change: PauseChange) -> bool:
    """Whether ``principal`` is told of ``change``: it may answer the pause, or the change
    handed the pause away from an audience it was in (so its view can drop it)."""
    if principal.may_answer(change.pause):
        return True
    done = change.pause.readdressed
    if change.readdressed is None or done is None:
        return False
    if done.previous is None:
        return change.pause.principal == principal.name
    return done.previous in principal.scopes


class _Subscriber:
    """One principal's queue of changes, bounded; overflowing it asks for a snapshot."""

    def __init__(self, principal: Principal, limit: int) -> None:
        self.principal = principal
        self.pending: deque[PauseChange] = deque()
        self.behind = False
        self.closed = False
        self._limit = limit
        self._wake = anyio.Event()

    def offer(self, changes: Sequence[PauseChange]) -> None:
        for change in changes:
            if len(self.pending) >= self._limit:
                self.fall_behind()
            self.pending.append(change)
        self._wake.set()

    def fall_behind(self) -> None:
        self.pending.clear()
        self.behind = True
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def wait(self) -> None:
        await self._wake.wait()
        self._wake = anyio.Event()


class FeedSubscription:
    """One subscriber's items; closing it leaves the feed, whether or not it was read."""

    def __init__(self, items: AsyncGenerator[FeedItem, None], leave: Callable[[], None]) -> None:
        self._items = items
        self._leave = leave

    def __aiter__(self) -> AsyncGenerator[FeedItem, None]:
        return self._items

    async def aclose(self) -> None:
        try:
            await self._items.aclose()
        finally:
            self._leave()


class PauseFeed:
    """One worker's feed; run `run` for as long as it serves."""

    def __init__(
        self,
        host: ServiceHost,
        *,
        queue_limit: int = QUEUE_LIMIT,
        replay_limit: int = REPLAY_LIMIT,
    ) -> None:
        self._host = host
        self._queue_limit = queue_limit
        self._replay_limit = replay_limit
        self._subscribers: set[_Subscriber] = set()
        self._wanted = anyio.Event()
        self._listening = anyio.Event()
        self._watching: anyio.CancelScope | None = None
        self._running = False

    def __repr__(self) -> str:
        return f"PauseFeed({len(self._subscribers)} subscribers)"

    @property
    def _changes(self) -> PauseChangeLog:
        """The one role of the host's store the feed watches."""
        return self._host.store

    @property
    def subscribers(self) -> int:
        """How many streams follow the feed now: an operator's view of what a worker holds."""
        return len(self._subscribers)

    # the watch ----------------------------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Watch the store while anyone subscribes, until cancelled.

        Started with ``task_group.start``, it takes subscribers once that returns.
        """
        self._running = True
        try:
            task_status.started()
            while True:
                if not self._subscribers:
                    self._wanted = anyio.Event()
                    await self._wanted.wait()
                try:
                    await self._watch()
                except StoreUnavailable as error:
                    logger.warning(
                        "the pause feed lost its watch; again in %gs: %s", RETRY_DELAY, error
                    )
                    self._listening = anyio.Event()
                    for subscriber in self._subscribers:
                        subscriber.fall_behind()
                    await anyio.sleep(RETRY_DELAY)
        finally:
            self._running = False
            for subscriber in self._subscribers:
                subscriber.close()

    async def _watch(self) -> None:
        listening = self._listening
        try:
            with anyio.CancelScope() as self._watching:
                async with aclosing(self._changes.watch_pause_changes()) as watch:
                    async for changes in watch:
                        listening.set()
                        if changes:
                            self._deliver(changes)
        finally:
            self._watching = None

    def _deliver(self, changes: Sequence[PauseChange]) -> None:
        hosted = [change for change in changes if change.pause.agent in self._host.agents]
        for subscriber in self._subscribers:
            visible = [c for c in hosted if sees(subscriber.principal, c)]
            if visible:
                subscriber.offer(visible)

    # subscribers --------------------------------------------------------------

    async def subscribe(self, principal: Principal, after: int | None) -> FeedSubscription:
        """``principal``'s feed, from a snapshot or from position ``after``.

        Raises `FeedUnavailable` before anything is sent when the watch
        cannot be established. Close the subscription (``aclosing``) to leave.
        """
        if not self._running:
            raise FeedUnavailable("the live pause feed is not running on this worker")
        subscriber = _Subscriber(principal, self._queue_limit)
        self._subscribers.add(subscriber)
        self._wanted.set()
        try:
            await self._until_listening()
        except BaseException:
            self._leave(subscriber)
            raise
        return FeedSubscription(self._items(subscriber, after), lambda: self._leave(subscriber))

    async def _until_listening(self) -> None:
        with anyio.move_on_after(LISTEN_TIMEOUT):
            await self._listening.wait()
            return
        raise FeedUnavailable("the store cannot be watched for pause changes right now")

    def _leave(self, subscriber: _Subscriber) -> None:
        self._subscribers.discard(subscriber)
        if not self._subscribers and self._watching is not None:
            # The next subscriber waits for a watch of its own, not this stopping one.
            self._listening = anyio.Event()
            self._watching.cancel()

    async def _items(
        self, subscriber: _Subscriber, after: int | None
    ) -> AsyncGenerator[FeedItem, None]:
        try:
            replayed: set[int] = set()
            if after is None:
                subscriber.behind = True
            else:
                changes = await self._changes.pause_changes_since(after, limit=self._replay_limit)
                if changes is None:
                    subscriber.behind = True
                else:
                    for change in self._visible(subscriber.principal, changes):
                        replayed.add(change.position)
                        yield self._item(change, subscriber.principal)
            while not subscriber.closed:
                if subscriber.behind:
                    subscriber.behind = False
                    await self._until_listening()
                    yield await self._snapshot(subscriber.principal)
                while subscriber.pending and not subscriber.behind:
                    change = subscriber.pending.popleft()
                    if change.position not in replayed:
                        yield self._item(change, subscriber.principal)
                if not subscriber.pending and not subscriber.behind and not subscriber.closed:
                    await subscriber.wait()
        finally:
            self._leave(subscriber)

    def _visible(self, principal: Principal, changes: Sequence[PauseChange]) -> list[PauseChange]:
        return [
            change
            for change in changes
            if change.pause.agent in self._host.agents and sees(principal, change)
        ]

    def _item(self, change: PauseChange, principal: Principal) -> FeedChange:
        pause = change.pause
        now = self._host.agent(None).clock()
        return FeedChange(change, pause.answerable(now) and principal.may_answer(pause))

    async def _snapshot(self, principal: Principal) -> FeedSnapshot:
        # The position first: a change after it may already show in the page,
        # and is sent again after the snapshot, which a client applies harmlessly.
        position = await self._changes.pause_change_position()
        return FeedSnapshot(position, await pause_page(self._host, principal))
