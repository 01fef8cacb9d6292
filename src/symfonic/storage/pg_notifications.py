"""PostgreSQL's watches of pause changes and run events: LISTEN on a connection outside the pool.

Notifications arrive at commit, in commit order, which is not always position order, so a
watch hands changes on as notified; a lost connection raises `StoreUnavailable`.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator
from contextlib import aclosing, suppress
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.pause_changes import PauseChange
from symfonic.storage.failures import is_unavailable
from symfonic.storage.pause_changes import PauseChangeRecord
from symfonic.storage.run_events import RUN_CHANNEL, SqlRunEvents

if TYPE_CHECKING:
    import asyncpg

# The channel the trigger notifies on (migration 0004).
CHANNEL = "symfonic_pause_changes"
LISTEN_CONNECT_TIMEOUT = 10.0
# Positions read in one batch at most, when notifications arrive faster than reads.
BATCH = 200


class PostgresNotifications(PauseChangeRecord, SqlRunEvents):
    """Watches of pause changes and of run events, driven by notifications."""

    # A change's transaction commits within this long of taking its position (a
    # transition's transaction commits milliseconds after its trigger runs).
    IN_FLIGHT_SECONDS: ClassVar[float] = 30.0
    _dsn: str

    async def watch_pause_changes(self) -> AsyncGenerator[list[PauseChange], None]:
        async with aclosing(self._notified(CHANNEL, "pause changes")) as notified:
            async for payloads in notified:
                yield await self.pause_changes_at([int(p) for p in payloads]) if payloads else []

    async def watch_run_events(self) -> AsyncGenerator[list[str], None]:
        async with aclosing(self._notified(RUN_CHANNEL, "run events")) as notified:
            async for payloads in notified:
                yield list(dict.fromkeys(payloads))

    async def _notified(self, channel: str, what: str) -> AsyncGenerator[list[str], None]:
        """The payloads notified on ``channel`` from now on, in batches, in commit order.

        The first batch is empty: the listener is established. Raises
        ``StoreUnavailable`` (naming ``what``) when its connection is lost.
        """
        payloads, notified = anyio.create_memory_object_stream[str | None](math.inf)
        connection = await self._listening_connection(what)

        def on_notification(_c: Any, _pid: int, _channel: str, payload: str) -> None:
            with suppress(anyio.ClosedResourceError):
                payloads.send_nowait(payload)

        def on_loss(_c: Any) -> None:
            with suppress(anyio.ClosedResourceError):
                payloads.send_nowait(None)

        try:
            connection.add_termination_listener(on_loss)
            await connection.add_listener(channel, on_notification)
            yield []
            while True:
                batch = [await notified.receive()]
                while len(batch) < BATCH:
                    try:
                        batch.append(notified.receive_nowait())
                    except anyio.WouldBlock:
                        break
                if None in batch:
                    raise StoreUnavailable(f"the connection listening for {what} was lost")
                yield [p for p in batch if p is not None]
        finally:
            connection.remove_termination_listener(on_loss)
            with anyio.CancelScope(shield=True), suppress(Exception):
                await connection.close(timeout=2)
            payloads.close()
            notified.close()

    async def _listening_connection(self, what: str) -> asyncpg.Connection:
        import asyncpg

        try:
            connection: asyncpg.Connection = await asyncpg.connect(
                self._dsn, timeout=LISTEN_CONNECT_TIMEOUT
            )
        except Exception as error:
            if is_unavailable(error) or isinstance(error, OSError | TimeoutError):
                raise StoreUnavailable(
                    f"the store cannot be watched for {what}: {error}"
                ) from error
            raise
        return connection
