"""Calls per second to an MCP stdio server: one kept connection against a process per call.

Run ``python -m bench.mcp_calls [--calls N]`` (with ``pip install -e '.[mcp]'``).
The kept connection is ``symfonic.mcp``'s; the process per call is what
langchain-mcp-adapters does by default (each tool call opens a new stdio
session: start the server, negotiate, call, stop), emulated here with the same
``mcp`` SDK. Both are measured in this one run, against the same server script,
and the ratio is printed; the figures are recorded in docs/mcp.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from symfonic.mcp import MCPTools

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


server.run()
'''


async def _kept(script: Path, calls: int) -> float:
    connection = {"transport": "stdio", "command": sys.executable, "args": [str(script)]}
    async with MCPTools({"echo": connection}) as tools:
        (echo,) = tools
        await echo.ainvoke({"text": "warm"})
        started = time.perf_counter()
        for i in range(calls):
            await echo.ainvoke({"text": str(i)})
        return calls / (time.perf_counter() - started)


async def _process_per_call(script: Path, calls: int) -> float:
    parameters = StdioServerParameters(command=sys.executable, args=[str(script)])
    started = time.perf_counter()
    for i in range(calls):
        async with Client(stdio_client(parameters)) as client:
            await client.call_tool("echo", {"text": str(i)})
    return calls / (time.perf_counter() - started)


async def main(kept_calls: int, spawned_calls: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "echo_server.py"
        script.write_text(SERVER)
        kept = await _kept(script, kept_calls)
        spawned = await _process_per_call(script, spawned_calls)
    print(f"one kept stdio connection: {kept:8.1f} calls/s ({kept_calls} calls)")
    print(f"a process per call:        {spawned:8.1f} calls/s ({spawned_calls} calls)")
    print(f"ratio: {kept / spawned:.0f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls over the kept connection")
    parser.add_argument("--spawned", type=int, default=20, help="calls with a process each")
    options = parser.parse_args()
    anyio.run(main, options.calls, options.spawned)
