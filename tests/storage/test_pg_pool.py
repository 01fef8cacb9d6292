"""The PostgreSQL connection pool: bounded, first come first served, never reusing a bad one.

The pool is exercised with stand-in connections, so every case (a wait that
times out, a waiter that gives up, a connection the server closed) is exact;
the PostgreSQL tests drive it against the real server.
"""

from __future__ import annotations

import anyio
import pytest

from symfonic.storage.pg_pool import ConnectionPool

pytestmark = pytest.mark.anyio


class Connection:
    """What the pool asks of an asyncpg connection."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.closed = False
        self.in_transaction = False

    def is_closed(self) -> bool:
        return self.closed

    def is_in_transaction(self) -> bool:
        return self.in_transaction

    def terminate(self) -> None:
        self.closed = True

    async def close(self, **_: object) -> None:
        self.closed = True


def pool_of(size: int, timeout: float = 5.0) -> tuple[ConnectionPool, list[Connection]]:
    opened: list[Connection] = []

    async def connect() -> Connection:
        opened.append(Connection(len(opened)))
        return opened[-1]

    return ConnectionPool(connect, size=size, timeout=timeout), opened  # type: ignore[arg-type]


async def test_connections_are_reused_and_never_more_than_size_are_open() -> None:
    pool, opened = pool_of(2)
    a, b = await pool.acquire(), await pool.acquire()
    pool.release(a)
    assert await pool.acquire() is a
    pool.release(a)
    pool.release(b)
    assert len(opened) == 2


async def test_a_full_pool_makes_the_next_caller_wait_until_one_comes_back() -> None:
    pool, opened = pool_of(1)
    held = await pool.acquire()
    got: list[object] = []

    async def waiter() -> None:
        got.append(await pool.acquire())

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(waiter)
        await anyio.sleep(0.05)
        assert got == []
        pool.release(held)
    assert got == [held] and len(opened) == 1


async def test_a_wait_longer_than_the_timeout_fails_and_takes_nothing() -> None:
    pool, _ = pool_of(1, timeout=0.1)
    held = await pool.acquire()
    with pytest.raises(TimeoutError):
        await pool.acquire()
    pool.release(held)
    assert await pool.acquire() is held


async def test_a_bad_connection_is_closed_and_its_place_opened_again() -> None:
    pool, opened = pool_of(1)
    first = await pool.acquire()
    pool.release(first, discard=True)
    assert first.closed
    second = await pool.acquire()
    assert second is opened[1]
    second.in_transaction = True  # left inside a transaction: not reusable
    pool.release(second)
    assert second.closed
    third = await pool.acquire()
    pool.release(third)
    third.closed = True  # the server closed it while it sat idle
    assert await pool.acquire() is opened[3]


async def test_a_waiter_woken_as_it_gives_up_passes_its_turn_on() -> None:
    pool, opened = pool_of(1)
    held = await pool.acquire()
    got: list[object] = []

    async def patient() -> None:
        got.append(await pool.acquire())

    first_in_line = anyio.CancelScope()

    async def quitter() -> None:
        with first_in_line:
            connection = await pool.acquire()
            try:
                await anyio.sleep(1)
            finally:
                pool.release(connection)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(quitter)
        await anyio.sleep(0.01)
        tasks.start_soon(patient)
        await anyio.sleep(0.01)
        # The release wakes the first waiter, which is told to leave before it runs.
        pool.release(held)
        first_in_line.cancel()
    assert got == [held] and len(opened) == 1
    assert not held.closed
