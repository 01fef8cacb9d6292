"""A bounded pool of asyncpg connections, as small as a checkout can be: newest idle first, then
a new one under `size`, then a fair wait up to `timeout`. A connection goes back idle only if it
is open and outside a transaction.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg


class ConnectionPool:
    def __init__(
        self,
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        *,
        size: int,
        timeout: float,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs room for at least one connection")
        self._connect = connect
        self._size = size
        self._timeout = timeout
        self._idle: list[asyncpg.Connection] = []
        self._open = 0  # connections open, or being opened, by this pool
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    async def acquire(self) -> asyncpg.Connection:
        """An open connection, all this caller's until `release`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while True:
            if self._closed:
                raise RuntimeError("the connection pool is closed")
            while self._idle:
                connection = self._idle.pop()
                if not connection.is_closed():
                    return connection
                self._open -= 1  # the server closed it while it sat idle
            if self._open < self._size:
                self._open += 1
                try:
                    return await self._connect()
                except BaseException:
                    self._open -= 1
                    self._wake()
                    raise
            await self._wait(deadline - loop.time())

    def release(self, connection: asyncpg.Connection, *, discard: bool = False) -> None:
        """Give ``connection`` back; ``discard`` (or a broken one) closes it instead."""
        if discard or self._closed or connection.is_closed() or connection.is_in_transaction():
            with suppress(Exception):
                connection.terminate()
            self._open -= 1
        else:
            self._idle.append(connection)
        self._wake()

    async def close(self) -> None:
        """Close the idle connections; those in use close as they come back."""
        self._closed = True
        idle, self._idle = self._idle, []
        self._open -= len(idle)
        for connection in idle:
            with suppress(Exception):
                await connection.close(timeout=5)
        while self._waiters:
            self._wake()

    async def _wait(self, seconds: float) -> None:
        """Until a connection comes back (or a place frees up), at most ``seconds``."""
        if seconds <= 0:
            raise TimeoutError("no database connection came free in time")
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, seconds)
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                # Woken, but leaving: the wake-up is someone else's now.
                self._wake()
            else:
                with suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
