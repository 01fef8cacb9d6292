"""What the model reads of an MCP tool result: text joined, other blocks named in words,
structured content kept as the artifact, and an `isError` result raised.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import ToolException
from mcp_types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

__all__ = ["MCPRefused", "MCPToolError", "observation"]


class MCPToolError(ToolException):
    """A tool call that failed: the server said so, died, or did not answer in time."""


class MCPRefused(MCPToolError):
    """A call the server refused with a protocol error; ``code`` is the JSON-RPC code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def observation(server: str, result: CallToolResult) -> tuple[str, Any]:
    """The result's text and artifact; raises `MCPToolError` for an ``isError`` result."""
    text = "\n".join(_words(block) for block in result.content)
    if result.is_error:
        raise MCPToolError(f"the MCP server {server} says the call failed: {text or 'no reason'}")
    artifact = result.structured_content
    if not text and artifact is not None:
        text = json.dumps(artifact, sort_keys=True, default=str)
    return text, artifact


def _words(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[an image, {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, AudioContent):
        return f"[a sound recording, {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, ResourceLink):
        return f"[a link to the resource {block.name} at {block.uri}]"
    if isinstance(block, EmbeddedResource):
        contents = block.resource
        if isinstance(contents, TextResourceContents):
            return f"[the resource {contents.uri}]\n{contents.text}"
        kind = contents.mime_type or "binary data"
        return f"[the resource {contents.uri}, {kind}, {_size(contents.blob)}]"
    return f"[a {getattr(block, 'type', 'content')} block]"


def _size(encoded: str) -> str:
    """The decoded size of base64 data, in words."""
    size = len(encoded) * 3 // 4
    return f"{size:,} bytes" if size < 10_000 else f"{size // 1024:,} KiB"
