"""One attempt to send one delivery: a 2xx delivers, anything else (a redirect included) fails
with why in words. It never raises for what the receiver does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import aiohttp

from symfonic.core.contracts.store import LeasedDelivery
from symfonic.core.contracts.types import PauseState
from symfonic.server.service.webhook_payloads import body_of
from symfonic.server.service.webhooks import TOKEN_EVENTS, Webhook, WebhookSettings

# Why a pause event cannot be sent at all: no later attempt could send it either.
GONE = "its pause was deleted before it could be sent"

Attempt = tuple[int | None, str | None]


async def attempt(
    client: aiohttp.ClientSession,
    webhook: Webhook,
    leased: LeasedDelivery,
    *,
    sent_at: datetime,
    settings: WebhookSettings,
    mint: Callable[[str], str],
) -> Attempt:
    """One request; the status it got and, unless it delivered, why not in words."""
    delivery, pause = leased.delivery, leased.pause
    token = None
    if (
        webhook.include_token
        and delivery.type in TOKEN_EVENTS
        and pause is not None
        and pause.state is PauseState.PENDING
    ):
        token = mint(pause.pause_id)
    body = body_of(delivery, pause, inbox_url=settings.inbox_url, token=token)
    if body is None:
        return None, GONE
    headers = {
        "content-type": "application/json",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": webhook.signer.sign(delivery.message_id, sent_at, body),
    }
    try:
        # The body is not read: a receiver's answer is its status.
        async with client.post(
            delivery.url, data=body, headers=headers, allow_redirects=False
        ) as response:
            status = response.status
    except TimeoutError:
        return None, f"no answer within {settings.timeout:g} s"
    except aiohttp.ClientConnectorError:
        return None, "could not connect to the receiver"
    except aiohttp.ClientError as error:
        return None, f"the connection failed ({type(error).__name__})"
    if 200 <= status < 300:
        return status, None
    if 300 <= status < 400:
        return status, f"the receiver answered {status}; redirects are not followed"
    return status, f"the receiver answered {status}"
