"""How a connection, spelled as langchain-mcp-adapters spells it, becomes an unopened MCP
client; a shape it cannot serve is refused in words before anything starts.
"""

from __future__ import annotations

import io
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TextIO

from mcp import Client
from mcp.client._transport import TransportStreams
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from symfonic.core.contracts.errors import ConfigurationError

__all__ = ["Connection", "client_for"]

Connection = Mapping[str, Any]

_TRANSPORTS = ("stdio", "streamable_http")


def client_for(server: str, connection: Connection, elicitation: ElicitationFnT) -> Client:
    """An unopened client for ``server``; each call makes a fresh one (a reconnect).

    ``elicitation`` answers a question an older server asks mid-call; giving
    one is also what declares to every server that this client takes questions.
    A connection's ``"mode"`` (``"legacy"``) pins the SDK's protocol negotiation.
    """
    mode = connection.get("mode", "auto")
    transport = connection.get("transport", "stdio")
    if transport == "stdio":
        if not connection.get("command"):
            raise ConfigurationError(f"the MCP server {server} needs a command to start it")
        parameters = StdioServerParameters(
            command=str(connection["command"]),
            args=[str(arg) for arg in connection.get("args") or ()],
            env={str(k): str(v) for k, v in (connection.get("env") or {}).items()} or None,
            cwd=connection.get("cwd"),
        )
        return Client(
            stdio_client(parameters, errlog=_errlog()), mode=mode, elicitation_callback=elicitation
        )
    if transport in ("streamable_http", "streamable-http", "http"):
        if not connection.get("url"):
            raise ConfigurationError(f"the MCP server {server} needs a url")
        headers = {str(k): str(v) for k, v in (connection.get("headers") or {}).items()}
        return Client(
            _http(str(connection["url"]), headers), mode=mode, elicitation_callback=elicitation
        )
    raise ConfigurationError(
        f"the MCP server {server} has the transport {transport!r}; symfonic speaks "
        f"{' and '.join(_TRANSPORTS)}"
    )


def _errlog() -> TextIO:
    """Where the server process writes its log: this process's stderr, or the
    original one when stderr was replaced by something with no file behind it
    (a notebook, a test capturing output), which a child process cannot write to."""
    try:
        sys.stderr.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
    return sys.stderr


@asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[TransportStreams]:
    """The streamable HTTP transport, with an HTTP client it closes itself.

    The headers go on an HTTP client of the SDK's own making (its timeouts), so
    a bearer token travels in a header and never in the URL.
    """
    async with (
        create_mcp_http_client(headers=headers or None) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams
