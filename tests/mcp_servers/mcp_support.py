"""The bank server's connections, and reading its ledger, for the MCP tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BANK = Path(__file__).with_name("bank_server.py")


def stdio_connection(ledger: Path) -> dict[str, Any]:
    return {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(BANK)],
        "env": {"BANK_LEDGER": str(ledger)},
    }


def entries(ledger: Path) -> list[dict[str, Any]]:
    """Every call the server ran, in order."""
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines()]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_bank(ledger: Path) -> Iterator[dict[str, Any]]:
    """The bank served over streamable HTTP on loopback, for as long as the block runs."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(BANK), "http", str(port)],
        env={**os.environ, "BANK_LEDGER": str(ledger)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the HTTP bank did not start") from None
                time.sleep(0.1)
        yield {"transport": "streamable_http", "url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        server.terminate()
        server.wait(timeout=10)
