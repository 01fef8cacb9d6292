"""One MCP server's live connection in this worker: at most one per server, shared by every
call, and replaced after it breaks or a call times out (docs/mcp.md). Every failure is an
`MCPToolError` the model reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    CallToolResult,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    InputResponses,
    RequestParamsMeta,
    Tool,
)
from mcp_types.version import is_version_at_least

from symfonic.mcp.connections import Connection, client_for
from symfonic.mcp.results import MCPRefused, MCPToolError

__all__ = ["INPUT_REQUIRED_VERSION", "LEGACY_KEY", "Recall", "ServerLink"]

INPUT_REQUIRED_VERSION = "2026-07-28"
"""The first protocol whose questions come back as the call's result (``input_required``)."""
LEGACY_KEY = "elicitation"
"""The key a question asked over the live session is filed under: it has none of its own."""

OPEN_TIMEOUT = 30.0
"""The least time a connection is given to open: a stdio server must start Python and
import its SDK first, which a short call timeout would not leave it on a busy machine."""

Recall = Callable[[ElicitRequestParams], ElicitResult | None]
"""The answer already given to a question, or ``None``."""


@dataclass
class _Asking:
    """The call in flight on an older protocol, and the question it ended at, if any."""

    recall: Recall | None
    unanswered: ElicitRequestParams | None = None


class _Held:
    """A client held open by its own task until `close`, or until it breaks."""

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
        self._asking_lock = anyio.Lock()
        self._asking: _Asking | None = None

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
        self,
        tool: str,
        arguments: dict[str, Any],
        meta: RequestParamsMeta | None,
        *,
        responses: InputResponses | None = None,
        state: str | None = None,
        recall: Recall | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """One round of a call to ``tool``: its result, or the server's questions.

        ``responses`` and ``state`` answer the server's last round. A server on an
        older protocol asks its question as a request in the middle of the call
        instead: ``recall`` answers it from the answers already given, and one it
        cannot answer ends the call there, returned as a round of questions with no
        state. A dead, unreachable or silent server is an `MCPToolError`; a
        refused call is an `MCPRefused` carrying the error's code.
        """
        try:
            held = await self._open()
        except Exception as error:
            raise MCPToolError(
                f"the MCP server {self.name} could not be reached: {_reason(error)}"
            ) from error
        if is_version_at_least(held.client.protocol_version, INPUT_REQUIRED_VERSION):
            return await self._round(held, tool, arguments, meta, responses, state)
        # An older server asks over the live session, so its question names no
        # call: one call at a time is in flight, and the question is that call's.
        async with self._asking_lock:
            self._asking = asking = _Asking(recall)
            try:
                result = await self._round(held, tool, arguments, meta, None, None)
            except MCPRefused:  # the refused question failed the call, as it should
                if asking.unanswered is None:
                    raise
            finally:
                self._asking = None
        if asking.unanswered is not None:
            request = ElicitRequest(params=asking.unanswered)
            return InputRequiredResult(input_requests={LEGACY_KEY: request})
        return result

    async def _round(
        self,
        held: _Held,
        tool: str,
        arguments: dict[str, Any],
        meta: RequestParamsMeta | None,
        responses: InputResponses | None,
        state: str | None,
    ) -> CallToolResult | InputRequiredResult:
        try:
            with anyio.fail_after(self.timeout):
                return await held.client.session.call_tool(
                    tool,
                    arguments,
                    input_responses=responses,
                    request_state=state,
                    meta=meta,
                    allow_input_required=True,
                )
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
            raise MCPRefused(
                f"the MCP server {self.name} refused the call: {error}", error.error.code
            ) from error
        except Exception as error:
            await self._drop(held)
            raise MCPToolError(
                f"the connection to the MCP server {self.name} broke during the call "
                f"({_reason(error)}); the call may or may not have taken effect"
            ) from error

    async def _elicited(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        """A question asked over the live session (older protocols), mid-call.

        Answered from the answers already given when one matches; otherwise it is
        kept as the call's question and refused, which ends the call there.
        """
        asking = self._asking
        if asking is None:
            return ErrorData(code=INVALID_REQUEST, message="no call of this client is asking")
        known = asking.recall(params) if asking.recall is not None else None
        if known is not None:
            return known
        if asking.unanswered is None:
            asking.unanswered = params
        return ErrorData(code=INVALID_REQUEST, message="the person will answer in a later call")

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
            held = _Held(client_for(self.name, self._connection, self._elicited))
            try:
                with anyio.fail_after(max(self.timeout, OPEN_TIMEOUT)):
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
