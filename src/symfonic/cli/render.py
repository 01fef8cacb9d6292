"""Printing a turn's stream at the terminal as it arrives."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator

from symfonic.cli.client import Frame


async def show(frames: AsyncIterator[Frame]) -> Frame | None:
    """Print text as it streams and tool activity as it happens; the terminal frame."""
    in_text = False
    last: Frame | None = None
    async for frame in frames:
        last = frame
        data = frame.data
        if frame.type == "text.delta":
            if not in_text:
                sys.stdout.write("assistant: ")
                in_text = True
            sys.stdout.write(str(data.get("text", "")))
            sys.stdout.flush()
            continue
        if in_text:
            sys.stdout.write("\n")
            in_text = False
        if frame.type == "tool.call":
            print(f"  → {data['name']}({json.dumps(data.get('args', {}))})")
        elif frame.type == "tool.result":
            print(f"  ← {data['name']} [{data['status']}]: {str(data.get('content', ''))[:200]}")
        elif frame.type == "error":
            print(f"error ({data.get('code')}): {data.get('message')}")
    if in_text:
        sys.stdout.write("\n")
    return last
