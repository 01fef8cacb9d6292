"""A PostgreSQL connection goes back to the pool only once its operation has ended.

Against the real server, in a database of the test's own: a statement cancelled
mid-way (``pg_sleep``) is ended on the server before the cancelled call returns,
the pool never has more server connections than its size, and its next use
works. A connection that read the server's farewell while idle in the pool, its
close not yet arrived (as in a restart), is replaced rather than failing the
next turn: a proxy between the pool and the server holds the close back, and
the backend is terminated, which is what a restart does to every connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import anyio
import asyncpg
import pytest
from anyio.abc import SocketStream

from symfonic.storage.postgres import PostgresStore
from symfonic.storage.statements import Statement
from symfonic.storage.transactions import Connection

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

SLEEP = Statement("SELECT pg_sleep(30) AS slept")
ONE = Statement("SELECT 1 AS one")
BUSY = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND pid <> pg_backend_pid() AND state = 'active'"
)
OURS = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
)
POOL_STATE = ("another operation", "cannot switch to state")


@pytest.fixture
async def admin(postgres_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(postgres_url)
    try:
        yield conn
    finally:
        await conn.close()


async def sleep_alone(store: PostgresStore) -> None:
    await store.read_rows(SLEEP, {}, "sleep")


async def sleep_in_a_transaction(store: PostgresStore) -> None:
    async def body(connection: Connection) -> None:
        await connection.rows(ONE, {})
        await connection.rows(SLEEP, {})

    await store.transaction(body, "hold")


@pytest.mark.parametrize("sleep", [sleep_alone, sleep_in_a_transaction])
async def test_a_cancelled_statement_has_ended_on_the_server_when_the_call_returns(
    postgres_url: str,
    admin: asyncpg.Connection,
    caplog: pytest.LogCaptureFixture,
    sleep: object,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with PostgresStore(postgres_url, pool_size=2) as store:
        for _ in range(3):
            started = anyio.current_time()
            with anyio.move_on_after(0.3):
                await sleep(store)  # type: ignore[operator]
            assert anyio.current_time() - started < 5
            # Nothing of ours still runs, and the pool holds no more than its size.
            assert await admin.fetchval(BUSY) == 0
            assert await admin.fetchval(OURS) <= 2
            assert [row["one"] for row in await store.read_rows(ONE, {}, "one")] == [1]
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if any(words in m for words in POOL_STATE)]


class Proxy:
    """TCP between the pool and the server; the server's close reaches the pool late."""

    def __init__(self, port: int, hold: float) -> None:
        self.server_port = port
        self.hold = hold
        self.farewell = anyio.Event()  # the server closed a connection; its last bytes passed

    async def serve(self, client: SocketStream) -> None:
        server = await anyio.connect_tcp("127.0.0.1", self.server_port)
        async with client, server, anyio.create_task_group() as pumps:
            pumps.start_soon(self._pump, client, server, 0.0)
            await self._pump(server, client, self.hold)
            pumps.cancel_scope.cancel()

    async def _pump(self, source: SocketStream, sink: SocketStream, hold: float) -> None:
        try:
            async for chunk in source:
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        if hold:
            self.farewell.set()
            await anyio.sleep(hold)


async def test_a_connection_that_read_the_servers_farewell_while_idle_is_replaced(
    postgres_url: str, admin: asyncpg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    parts = urlsplit(postgres_url)
    proxy = Proxy(parts.port or 5432, hold=2.0)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    via_proxy = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}"))
    async with listener, anyio.create_task_group() as background:
        background.start_soon(listener.serve, proxy.serve)
        async with PostgresStore(via_proxy, pool_size=1) as store:
            await store.read_rows(ONE, {}, "one")  # one idle connection, its statement prepared
            (pid,) = [
                row["pid"]
                for row in await admin.fetch(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                )
            ]
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            with anyio.fail_after(5):
                await proxy.farewell.wait()
            await anyio.sleep(0.1)  # the pool's connection has read the farewell
            assert [row["one"] for row in await store.read_rows(ONE, {}, "one")] == [1]
        background.cancel_scope.cancel()
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if any(words in m for words in POOL_STATE)]
