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
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import ElicitRequest, ElicitRequestURLParams, ElicitResult, InputRequiredResult
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


class Amount(BaseModel):
    limit: int


def ask_iban(name: str) -> Elicit[Payee]:
    # Runs on every round of the call: the ledger counts how often the server was asked.
    _ledger({"tool": "ask_iban", "name": name})
    return Elicit(f"What is {name}'s IBAN?", Payee)


def ask_limit(
    name: str, payee: Annotated[ElicitationResult[Payee], Resolve(ask_iban)]
) -> Elicit[Amount] | AcceptedElicitation[Amount]:
    if not isinstance(payee, AcceptedElicitation):
        return AcceptedElicitation[Amount].model_construct(data=Amount(limit=0))
    return Elicit(f"How much may {name} be sent a day?", Amount)


@bank.tool()
async def add_payee(
    name: str, payee: Annotated[ElicitationResult[Payee], Resolve(ask_iban)], ctx: Context
) -> str:
    """Add a payee, asking the person for their bank details."""
    meta = ctx.request_context.meta or {}
    iban = payee.data.iban if isinstance(payee, AcceptedElicitation) else None
    _ledger(
        {
            "tool": "add_payee",
            "answer": payee.action,
            "iban": iban,
            "key": meta.get("idempotencyKey"),
        }
    )
    return f"{name}: {iban or payee.action}"


@bank.tool()
async def payee_record(
    name: str, payee: Annotated[ElicitationResult[Payee], Resolve(ask_iban)]
) -> dict[str, Any]:
    """Add a payee, asking for their IBAN, and give back their record as structured content."""
    iban = payee.data.iban if isinstance(payee, AcceptedElicitation) else None
    _ledger({"tool": "payee_record", "answer": payee.action, "iban": iban})
    return {"name": name, "iban": iban}


@bank.tool()
async def add_limited_payee(
    name: str, limit: Annotated[ElicitationResult[Amount], Resolve(ask_limit)]
) -> str:
    """Add a payee with a daily limit: two questions, the second after the first."""
    amount = limit.data.limit if isinstance(limit, AcceptedElicitation) else None
    _ledger({"tool": "add_limited_payee", "limit": amount})
    return f"{name} may be sent {amount} a day"


@bank.tool()
async def sign_in(ctx: Context) -> str | InputRequiredResult:
    """Sign in to the bank, on its own page (a URL question)."""
    answered = (ctx.input_responses or {}).get("login")
    if isinstance(answered, ElicitResult):
        _ledger({"tool": "sign_in", "answer": answered.action})
        return f"signed in: {answered.action}"
    page = ElicitRequestURLParams(message="Sign in to the bank", url="https://bank.example/login")
    return InputRequiredResult(input_requests={"login": ElicitRequest(params=page)})


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
