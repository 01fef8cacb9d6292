"""The MCP server the tests start: a bank that writes every call it runs to a ledger.

Run as ``python bank_server.py`` (stdio) or ``python bank_server.py http PORT``
(streamable HTTP on loopback). ``BANK_LEDGER`` names the file each ran call is
appended to, one JSON line with the process id and the idempotency key the
request's ``_meta`` carried, so a test can count what reached the server.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

bank = MCPServer("bank")


def _ledger(entry: dict[str, Any]) -> None:
    with open(os.environ["BANK_LEDGER"], "a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")


@bank.tool()
def transfer_funds(amount: int, to: str, ctx: Context) -> str:
    """Send money to someone."""
    meta = ctx.request_context.meta or {}
    _ledger(
        {"tool": "transfer_funds", "amount": amount, "to": to, "key": meta.get("idempotencyKey")}
    )
    return f"sent {amount} to {to}"


@bank.tool()
def balance() -> str:
    """The account's balance."""
    _ledger({"tool": "balance"})
    return "balance: 100"


@bank.tool()
def overdraw(amount: int) -> str:
    """Send more money than the account holds."""
    raise ToolError(f"insufficient funds for {amount}")


@bank.tool()
def statement() -> dict[str, Any]:
    """The last transfers, as structured content."""
    return {"transfers": [{"amount": 5, "to": "bob"}]}


class Payee(BaseModel):
    iban: str


@bank.tool()
async def add_payee(name: str, ctx: Context) -> str:
    """Add a payee, asking the person for their bank details."""
    answer = await ctx.elicit(f"What is {name}'s IBAN?", Payee)
    _ledger({"tool": "add_payee", "answer": answer.action})
    return f"{name}: {answer.action}"


@bank.tool()
def crash() -> str:
    """Stop the server mid-call."""
    _ledger({"tool": "crash"})
    os._exit(3)


@bank.tool()
def stall(seconds: float) -> str:
    """Answer after ``seconds``."""
    time.sleep(seconds)
    return "late"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        bank.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        bank.run()
