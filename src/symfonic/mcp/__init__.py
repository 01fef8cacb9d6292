"""Tools from MCP servers: ``await load_mcp_tools(connections)`` for ``SymfonicAgent(tools=...)``.

Installed with ``pip install 'symfonic[mcp]'`` (the official ``mcp`` SDK). The
connections are the dicts langchain-mcp-adapters takes; see docs/mcp.md.
"""

from symfonic.mcp.connections import Connection
from symfonic.mcp.results import MCPToolError
from symfonic.mcp.tools import IDEMPOTENCY_META, MCPTool, MCPTools, load_mcp_tools

__all__ = [
    "IDEMPOTENCY_META",
    "Connection",
    "MCPTool",
    "MCPToolError",
    "MCPTools",
    "load_mcp_tools",
]
