"""The socket ``symfonic serve`` binds answers kept-alive requests without waiting.

Responses leave at once only on connections with ``TCP_NODELAY``: otherwise
each small response on a kept-alive connection waits for the client's delayed
acknowledgement, about 40 ms a request. asyncio sets it on the connections it
accepts (uvicorn's path) only from a listening socket that names its protocol.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from symfonic.cli.serve_listen import listening_socket

pytestmark = pytest.mark.anyio


async def test_accepted_connections_send_without_waiting_for_acknowledgements() -> None:
    listening = listening_socket("127.0.0.1", 0)
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted = writer.get_extra_info("socket")
        nodelay.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accept, sock=listening)
    async with server:
        port = listening.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(nodelay, 5) != 0
        writer.close()
