"""``symfonic webhooks``: the destinations and deliveries that need attention, every destination's
circuit (``destinations``), and a delivery sent again (``resend ID``); an operator's key.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import httpx

from symfonic.cli.client import DEFAULT_URL, ApiError, Client
from symfonic.cli.terminal import Terminal, failed

STATES = ("failed", "pending", "delivered")


def register(sub: Any) -> None:
    p = sub.add_parser("webhooks", help="list webhook deliveries, and resend one")
    p.add_argument(
        "action",
        nargs="?",
        choices=("list", "resend", "destinations"),
        default="list",
        help="list (the default), resend ID, or destinations (every URL's circuit)",
    )
    p.add_argument("id", nargs="?", type=int, help="the delivery to resend")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument(
        "--state",
        action="append",
        choices=STATES,
        help="only deliveries in this state (repeatable; default: failed and pending)",
    )
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.set_defaults(run=run)


def describe(delivery: dict[str, Any]) -> str:
    """One delivery in words."""
    about = (
        f"pause {delivery['pause_id']}"
        if delivery.get("pause_id")
        else (f"session {delivery['session_id']}")
    )
    attempts = delivery["attempts"]
    tried = f"{attempts} attempt{'' if attempts == 1 else 's'}"
    state = delivery["state"]
    if state == "delivered":
        how = f"delivered at {delivery['delivered_at']} after {tried}"
    elif state == "failed":
        how = f"failed after {tried}: {delivery['last_error'] or 'no reason recorded'}"
    elif attempts:
        how = (
            f"pending, next attempt at {delivery['next_attempt_at']} after {tried} "
            f"({delivery['last_error'] or 'no reason recorded'})"
        )
    else:
        how = "pending, not sent yet"
    return f"{delivery['type']} for {about} to {delivery['url']}: {how}"


async def _destinations(client: Client, term: Terminal, *, every: bool) -> None:
    """Each destination's circuit in words; without ``every``, only those not closed."""
    for destination in await client.webhook_destinations():
        if every or destination.state != "closed":
            term.line(destination.summary, label=f"{destination.url}: ", label_style="bold")


async def _list(client: Client, term: Terminal, states: list[str] | None, limit: int) -> None:
    await _destinations(client, term, every=False)
    found = await client.webhook_deliveries(states, limit=limit)
    deliveries = [delivery.model_dump(mode="json") for delivery in found]
    shown = " or ".join(states or ["failed", "pending"])
    if not deliveries:
        term.line(f"no {shown} webhook deliveries")
        return
    for delivery in deliveries:
        term.line(describe(delivery), label=f"#{delivery['id']} ", label_style="bold")


def run(args: argparse.Namespace) -> int:
    term = Terminal()
    client = Client(args.url)
    if args.action == "resend" and args.id is None:
        return failed("webhooks", "say which delivery to resend: symfonic webhooks resend ID")

    async def main() -> None:
        async with client:
            if args.action == "resend":
                delivery = await client.resend_delivery(args.id)
                term.line(
                    f"delivery #{delivery.id} ({delivery.type} to "
                    f"{delivery.url}) will be sent again"
                )
            elif args.action == "destinations":
                await _destinations(client, term, every=True)
            else:
                await _list(client, term, args.state, args.limit)

    try:
        anyio.run(main)
    except (ApiError, httpx.HTTPError) as error:
        term.quiet()
        return failed("webhooks", client.explain(error))
    return 0
