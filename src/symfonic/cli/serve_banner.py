"""``symfonic serve``'s start-up line, printed once everything it announces is up; no secret in
it: the store's password masked, principals without keys, webhooks without credentials.
"""

from __future__ import annotations

from collections.abc import Sequence

from symfonic.agent.agent import SymfonicAgent
from symfonic.cli.serve_listen import base_url, is_loopback
from symfonic.cli.serve_webhooks import webhooks_shown
from symfonic.server.http.auth import Authenticator
from symfonic.server.service.webhooks import Webhook
from symfonic.storage import masked_url


def startup_line(
    host: str,
    port: int,
    url: str,
    agents: list[SymfonicAgent],
    authenticator: Authenticator,
    insecure: bool,
    webhooks: Sequence[Webhook] = (),
) -> str:
    names = ", ".join(agent.name for agent in agents)
    if authenticator.open:
        auth = "no API keys; every request runs as principal 'local'" + (
            " (--insecure: NOT loopback-only)"
            if insecure and not is_loopback(host)
            else ", loopback only"
        )
    else:
        auth = f"API keys for {', '.join(authenticator.principal_names)}"
    line = (
        f"symfonic serve: {base_url(host, port)} | store {masked_url(url)} | agents: {names} "
        f"(default {agents[0].name}) | auth: {auth}"
    )
    return line + (f" | webhooks: {webhooks_shown(webhooks)}" if webhooks else "")
