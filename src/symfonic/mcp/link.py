"""One MCP server's live connection in this worker.

A :class:`ServerLink` owns the invariant that a worker holds at most one live
connection per server: opened on the first call, shared by every later call and
turn (one stdio process serves them all), and replaced by a fresh one after it
breaks -- the server died, or a call outlived its timeout (a server that hung
once is not trusted with the next call). Every failure of the connection is an
:class:`~symfonic.mcp.results.MCPToolError`, which the kernel makes the error
observation the model reads; the turn goes on.

The SDK's client must be entered and left in one task (its transport runs a task
group), while calls come from whichever task runs a turn. So each connection is
held open by a task of its own, and calls reach it through the client's streams.
Nothing here is ever written to a checkpoint: a link is a live handle, rebuilt
from the connection's configuration by any worker that needs it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, RequestParamsMeta, Tool

from symfonic.mcp.connections import Connection, client_for
from symfonic.mcp.results import MCPToolError

__all__ = ["ServerLink"]


class _Held:
    """A client held open by its own task until :meth:`close`, or until it breaks."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.failure: BaseException | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._task = asyncio.get_running_loop().create_task(self._hold())

    async def _hold(self) -> None:
        try:
            async with self.client:
                self._ready.set()
                await self._stop.wait()
        except Exception as error:  # the server died or refused us: this link is spent
            self.failure = error
        finally:
            self._ready.set()

    @property
    def broken(self) -> bool:
        return self._task.done()

    async def ready(self) -> None:
        await self._ready.wait()
        if self.broken:
            raise self.failure or RuntimeError("the connection closed as it opened")

    async def close(self) -> None:
        self._stop.set()
        with anyio.CancelScope(shield=True):
            await asyncio.wait([self._task])


class ServerLink:
    """The live connection to one server, with a timeout on every call."""

    def __init__(self, name: str, connection: Connection, *, timeout: float) -> None:
        self.name = name
        self.timeout = timeout
        self._connection = connection
        self._held: _Held | None = None
        self._lock = anyio.Lock()

    async def list_tools(self) -> list[Tool]:
        """Every tool the server lists, page by page."""
        held = await self._open()
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            with anyio.fail_after(self.timeout):
                page = await held.client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: RequestParamsMeta | None
    ) -> CallToolResult:
        """Call ``tool``; a dead, unreachable or silent server is an :class:`MCPToolError`."""
        try:
            held = await self._open()
        except Exception as error:
            raise MCPToolError(
                f"the MCP server {self.name} could not be reached: {_reason(error)}"
            ) from error
        try:
            with anyio.fail_after(self.timeout):
                return await held.client.call_tool(tool, arguments, meta=meta)
        except TimeoutError as error:
            await self._drop(held)
            raise MCPToolError(
                f"the MCP server {self.name} did not answer within {self.timeout:g} seconds; "
                "the call may or may not have taken effect"
            ) from error
        except MCPError as error:
            if held.broken or error.error.code == CONNECTION_CLOSED:
                await self._drop(held)
                raise MCPToolError(
                    f"the MCP server {self.name} stopped during the call; the call may or "
                    "may not have taken effect"
                ) from error
            raise MCPToolError(f"the MCP server {self.name} refused the call: {error}") from error
        except Exception as error:
            await self._drop(held)
            raise MCPToolError(
                f"the connection to the MCP server {self.name} broke during the call "
                f"({_reason(error)}); the call may or may not have taken effect"
            ) from error

    async def aclose(self) -> None:
        """Close the live connection, if any; the next call opens a fresh one."""
        async with self._lock:
            held, self._held = self._held, None
        if held is not None:
            await held.close()

    async def _open(self) -> _Held:
        async with self._lock:
            if self._held is not None and not self._held.broken:
                return self._held
            spent, self._held = self._held, None
            if spent is not None:
                await spent.close()
            held = _Held(client_for(self.name, self._connection))
            try:
                with anyio.fail_after(self.timeout):
                    await held.ready()
            except BaseException:
                await held.close()
                raise
            self._held = held
            return held

    async def _drop(self, held: _Held) -> None:
        async with self._lock:
            if self._held is held:
                self._held = None
        await held.close()


def _reason(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return _reason(error.exceptions[0])
    return str(error) or type(error).__name__
