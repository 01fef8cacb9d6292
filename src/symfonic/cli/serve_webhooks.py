"""``symfonic serve``'s ``--webhook`` options: every URL shares the secret in
``SYMFONIC_WEBHOOK_SECRET`` (never the command line), and a URL is shown by scheme, host and path.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from symfonic.agent.retention import Retention, parse_age
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.webhooks import WebhookEventType
from symfonic.server.service.webhooks import (
    ALL_EVENTS,
    RETRY_SCHEDULE,
    Webhook,
    WebhookSettings,
    secret_key,
)

WEBHOOK_SECRET = "SYMFONIC_WEBHOOK_SECRET"
MAKE_SECRET = f"export {WEBHOOK_SECRET}=whsec_$(head -c 32 /dev/urandom | base64)"


@dataclass(frozen=True)
class Served:
    """What a serve process runs beside its routes."""

    retention: Retention | None
    webhooks: list[Webhook]
    webhook_settings: WebhookSettings | None
    cors_origins: list[str] = field(default_factory=list)
    """The browser origins that may call the service from another origin."""


def add_webhook_options(p: Any) -> None:
    p.add_argument(
        "--webhook",
        action="append",
        default=[],
        metavar="URL",
        help=f"send signed events to URL (repeatable; the secret is {WEBHOOK_SECRET})",
    )
    p.add_argument(
        "--webhook-event",
        action="append",
        default=[],
        metavar="TYPE",
        choices=[event.value for event in WebhookEventType],
        help="only these event types (repeatable; default: all of "
        + ", ".join(event.value for event in WebhookEventType)
        + ")",
    )
    p.add_argument(
        "--webhook-include-token",
        action="store_true",
        help="put the pause's token in pause.created and pause.expiring (whoever receives "
        "them may then answer the pause)",
    )
    p.add_argument(
        "--inbox-url",
        metavar="URL",
        help="the web inbox's public base URL, to link each pause event to it",
    )
    p.add_argument(
        "--webhook-timeout",
        type=float,
        default=WebhookSettings.timeout,
        metavar="SECONDS",
        help=f"seconds a receiver may take to answer (default: {WebhookSettings.timeout:g})",
    )
    p.add_argument(
        "--webhook-retry",
        metavar="SECONDS,...",
        help="seconds before each retry, ±20%% (default: "
        + ",".join(f"{delay:g}" for delay in RETRY_SCHEDULE)
        + "); a delivery fails after one attempt more than the list is long",
    )
    p.add_argument(
        "--webhook-failed-ttl",
        default="7d",
        metavar="AGE",
        help="delete a delivery that failed after its last attempt once it is this old "
        "(30d, 12h, 90m; default: 7d)",
    )
    p.add_argument(
        "--webhook-expiring-lead",
        type=float,
        default=WebhookSettings.expiring_lead,
        metavar="SECONDS",
        help="send pause.expiring this long before a pause expires, or at a tenth of its "
        f"lifetime if that is shorter (default: {WebhookSettings.expiring_lead:g})",
    )


def _schedule(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ConfigurationError(
            f"--webhook-retry {text!r} is not a list of seconds such as 5,30,120"
        ) from None


def webhooks_of(
    args: argparse.Namespace, secret: str | None
) -> tuple[list[Webhook], WebhookSettings | None]:
    """The subscriptions the options ask for; none without ``--webhook``."""
    if not args.webhook:
        if args.webhook_event or args.webhook_include_token:
            raise ConfigurationError("--webhook-event and --webhook-include-token need --webhook")
        return [], None
    problem = secret_key(secret)
    if isinstance(problem, str):
        raise ConfigurationError(
            f"--webhook {destination(args.webhook[0])} needs a signing secret, and "
            f"{WEBHOOK_SECRET} {problem}; make one with: {MAKE_SECRET}"
        )
    events = args.webhook_event or None
    webhooks = [
        Webhook(url, secret or "", events=events, include_token=args.webhook_include_token)
        for url in args.webhook
    ]
    schedule = RETRY_SCHEDULE if args.webhook_retry is None else _schedule(args.webhook_retry)
    settings = WebhookSettings(
        timeout=args.webhook_timeout,
        retry_schedule=schedule,
        expiring_lead=args.webhook_expiring_lead,
        inbox_url=args.inbox_url,
        failed_ttl=parse_age(args.webhook_failed_ttl).total_seconds(),
    )
    return webhooks, settings


def destination(url: str) -> str:
    """``url`` as scheme, host, port and path: a user, password, query or fragment stays out."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def webhooks_shown(webhooks: Sequence[Webhook]) -> str:
    """Each destination, then the events sent to them, for the start-up line."""
    destinations = ", ".join(dict.fromkeys(destination(hook.url) for hook in webhooks))
    wanted = frozenset().union(*(hook.event_types for hook in webhooks))
    if wanted == ALL_EVENTS:
        events = "every event"
    else:
        events = ", ".join(event.value for event in WebhookEventType if event in wanted)
    return f"{destinations} ({events})"
