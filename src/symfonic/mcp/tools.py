"""An MCP server's tools as langchain tools, and the set that closes their connections, as a
context manager or through the agent that holds them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, Literal, cast, overload

import anyio
from langchain_core.callbacks import AsyncCallbackManagerForToolRun
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    RequestParamsMeta,
    Tool,
)
from pydantic import ConfigDict, Field

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.types import Answer, AnswerStatus
from symfonic.kernel.tools import IDEMPOTENCY_PARAMETER, ToolAsks
from symfonic.mcp.connections import Connection
from symfonic.mcp.link import LEGACY_KEY, Recall, ServerLink
from symfonic.mcp.questions import Continuation, asked_of, response_to
from symfonic.mcp.results import MCPRefused, MCPToolError, observation

__all__ = ["DEFAULT_CALL_TIMEOUT", "IDEMPOTENCY_META", "MCPTool", "MCPTools", "load_mcp_tools"]

DEFAULT_CALL_TIMEOUT = 60.0
IDEMPOTENCY_META = "idempotencyKey"
MAX_ROUNDS = 10
"""Rounds of questions already answered a call may go through before it is given up."""
STATE_ONLY_PAUSE = 0.1


class MCPTool(BaseTool):
    """One tool of one MCP server, called over its server's shared link."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    link: ServerLink = Field(exclude=True)
    connections: MCPTools = Field(exclude=True)
    remote_name: str
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("an MCP tool is called asynchronously")

    async def _arun(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> tuple[str, Any]:
        key = (config.get("configurable") or {}).get(IDEMPOTENCY_PARAMETER)
        call = Continuation(self.link.name, self.remote_name, dict(kwargs))
        first = await self.link.call(call.tool, call.arguments, _meta(key), recall=_recall(call))
        return await self._finish(call, first, _meta(key))

    async def answered(
        self, continuation: Mapping[str, Any], answer: Answer, status: AnswerStatus, key: str
    ) -> tuple[str, Any]:
        """Go on with a call that asked the person, on any worker, with their answer.

        The answer is filed with the others; a question of the same round still
        unanswered is the next pause, sent nothing. Otherwise the round's answers
        go to the server with its ``requestState``; a server that refuses that
        state (``-32602``) is asked again from the first round, and answered from
        the store (see `symfonic.mcp.questions`). The result is the text and
        artifact (structured content) a call that never paused returns.
        """
        call = Continuation.of(continuation)
        call = call.answering(response_to(call.unanswered()[0], answer, status))
        if call.unanswered():
            raise ToolAsks(call.question())
        meta = _meta(key)
        try:
            result = await self.link.call(
                call.tool,
                call.arguments,
                meta,
                responses=call.responses(),
                state=call.state,
                recall=_recall(call),
            )
        except MCPRefused as refused:
            if refused.code != INVALID_PARAMS or call.state is None:
                raise
            result = await self.link.call(call.tool, call.arguments, meta, recall=_recall(call))
        return await self._finish(call, result, meta)

    async def _finish(
        self,
        call: Continuation,
        result: CallToolResult | InputRequiredResult,
        meta: RequestParamsMeta | None,
    ) -> tuple[str, Any]:
        """The call's observation, once every question the server asks has an answer.

        A round asked only what is already answered is answered from the store;
        one with a question nobody has answered is the call's pause.
        """
        for _ in range(MAX_ROUNDS):
            if isinstance(result, CallToolResult):
                return observation(self.link.name, result)
            asked = tuple(
                asked_of(self.link.name, key, request)
                for key, request in (result.input_requests or {}).items()
            )
            call = replace(call, state=result.request_state, round=asked)
            if call.unanswered():
                raise ToolAsks(call.question())
            if not asked:  # the server is working: it asks nothing, only to be called again
                await anyio.sleep(STATE_ONLY_PAUSE)
            result = await self.link.call(
                call.tool,
                call.arguments,
                meta,
                responses=call.responses(),
                state=call.state,
                recall=_recall(call),
            )
        raise MCPToolError(
            f"the MCP server {self.link.name} kept asking after {MAX_ROUNDS} rounds answered"
        )


def _meta(key: object) -> RequestParamsMeta | None:
    return cast(RequestParamsMeta, {IDEMPOTENCY_META: str(key)}) if key else None


def _recall(call: Continuation) -> Recall:
    """How a question asked mid-call (older protocols) is answered from the store."""

    def recall(params: ElicitRequestParams) -> ElicitResult | None:
        asked = asked_of(call.server, LEGACY_KEY, ElicitRequest(params=params))
        stored = call.stored(asked)
        return None if stored is None else ElicitResult.model_validate(stored)

    return recall


class MCPTools(Sequence[BaseTool]):
    """The tools of several MCP servers, and the connections they share.

    Args:
        connections: server name to connection, as langchain-mcp-adapters spells it.
        prefix: name each tool ``<server>_<tool>``; OpenAI and Anthropic accept only
            letters, digits, ``_`` and ``-`` in a tool name.
        call_timeout: seconds any call may take (a connection's own ``"timeout"``
            overrides it); a call past it is a tool error, and the connection is
            replaced before the next call.
    """

    def __init__(
        self,
        connections: Mapping[str, Connection],
        *,
        prefix: bool = False,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        if call_timeout <= 0:
            raise ConfigurationError("an MCP call timeout must be positive seconds")
        self.links = {
            name: ServerLink(
                name, connection, timeout=float(connection.get("timeout", call_timeout))
            )
            for name, connection in connections.items()
        }
        self.prefix = prefix
        self._tools: list[MCPTool] = []

    async def load(self) -> MCPTools:
        """Connect to every server and list its tools; the connections stay open."""
        tools: list[MCPTool] = []
        for link in self.links.values():
            tools.extend(self._tool(link, listed) for listed in await link.list_tools())
        self._tools = tools
        return self

    def _tool(self, link: ServerLink, listed: Tool) -> MCPTool:
        return MCPTool(
            name=f"{link.name}_{listed.name}" if self.prefix else listed.name,
            description=listed.description or listed.title or listed.name,
            args_schema=dict(listed.input_schema),
            link=link,
            connections=self,
            remote_name=listed.name,
        )

    async def aclose(self) -> None:
        """Close every server's connection (a later call opens a fresh one)."""
        for link in self.links.values():
            await link.aclose()

    async def __aenter__(self) -> MCPTools:
        try:
            return await self.load()
        except BaseException:
            await self.aclose()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    @overload
    def __getitem__(self, index: int) -> BaseTool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[BaseTool]: ...
    def __getitem__(self, index: int | slice) -> BaseTool | Sequence[BaseTool]:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools)


async def load_mcp_tools(
    connections: Mapping[str, Connection],
    *,
    prefix: bool = False,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
) -> MCPTools:
    """The tools of every server in ``connections``, for ``SymfonicAgent(tools=...)``.

    The agent closes the connections when it closes; without an agent, close them
    with ``await tools.aclose()`` or use ``async with MCPTools(connections)``.
    """
    tools = MCPTools(connections, prefix=prefix, call_timeout=call_timeout)
    return await tools.__aenter__()
