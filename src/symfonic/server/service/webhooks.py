"""Webhook subscriptions as an operator configures them, and the settings they share.

A signing secret is checked when built and never appears in a `repr`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from standardwebhooks import Webhook as Signer

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.webhooks import WebhookEventType

SECRET_PREFIX = "whsec_"
MIN_SECRET_BYTES = 16
ALL_EVENTS = frozenset(WebhookEventType)
# The events that may carry a token: those a person acts on by answering.
TOKEN_EVENTS = frozenset({WebhookEventType.PAUSE_CREATED, WebhookEventType.PAUSE_EXPIRING})

# Seconds after each failed attempt before the next: about a day in all.
RETRY_SCHEDULE = (5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0, 10800.0, 21600.0, 43200.0)
JITTER = 0.2
# How long a delivery that failed is kept for an operator to see and resend.
FAILED_TTL = 7 * 24 * 3600.0


def secret_key(secret: str | None) -> bytes | str:
    """The signing key in ``secret``, or what is wrong with it, in words."""
    if not secret:
        return "is missing"
    if not secret.startswith(SECRET_PREFIX):
        return "does not start with whsec_"
    body = secret[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) < MIN_SECRET_BYTES:
        return f"is not whsec_ followed by base64 of at least {MIN_SECRET_BYTES} bytes"
    return key


def signer_of(secret: str | None, url: str) -> Signer:
    """The signer for ``secret``; a missing or malformed one is a one-line error.

    The words are a Python caller's: ``symfonic serve`` checks the secret in its
    environment variable first and says it in a shell user's words.
    """
    key = secret_key(secret)
    if isinstance(key, str):
        raise ConfigurationError(
            f"the webhook secret for {url} {key}: pass Webhook(url, secret) a secret made "
            f"of whsec_ and base64 of {MIN_SECRET_BYTES} random bytes or more, e.g. "
            '"whsec_" + base64.b64encode(os.urandom(32)).decode()'
        )
    return Signer(key)


def events_of(names: Iterable[str] | None) -> frozenset[WebhookEventType]:
    """Event types by name (``None``: all); an unknown name is a configuration error."""
    if names is None:
        return ALL_EVENTS
    chosen = set()
    for name in names:
        try:
            chosen.add(WebhookEventType(name))
        except ValueError:
            known = ", ".join(sorted(e.value for e in WebhookEventType))
            raise ConfigurationError(f"no webhook event {name!r}; there are {known}") from None
    if not chosen:
        raise ConfigurationError("a webhook needs at least one event type")
    return frozenset(chosen)


@dataclass(frozen=True)
class Webhook:
    """One subscription: where to send, how to sign, what to send.

    Attributes:
        url: the receiver's http(s) URL.
        secret: the signing secret, ``whsec_`` and base64 (Standard Webhooks).
        events: event type names, e.g. ``{"pause.created"}``. Default: all.
        include_token: ``pause.created`` and ``pause.expiring`` carry the pause's
            token, so the receiver may answer it.
    """

    url: str
    secret: str = field(repr=False)
    events: Iterable[str] | None = None
    include_token: bool = False
    signer: Signer = field(init=False, repr=False, compare=False)
    event_types: frozenset[WebhookEventType] = field(init=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(f"the webhook URL {self.url!r} is not an http(s) URL")
        object.__setattr__(self, "signer", signer_of(self.secret, self.url))
        object.__setattr__(self, "event_types", events_of(self.events))


@dataclass(frozen=True)
class WebhookSettings:
    """What a worker's subscriptions share. Times are in seconds.

    Attributes:
        timeout: how long one request may take.
        retry_schedule: the wait after each failed attempt before the next.
        jitter: the fraction each wait varies by, either way.
        max_attempts: attempts before a delivery is ``failed``. Default: one more
            than the schedule.
        lease: how long a worker holds a delivery it sends; longer than ``timeout``.
        poll_interval: the time between looks at the outbox.
        concurrency: requests in flight at once from this worker.
        per_destination: of those, at most this many to one URL.
        batch: deliveries leased by one statement.
        circuit_failures: failed attempts in a row that open a destination's circuit.
        circuit_backoff: how long an open circuit waits, doubled each time it opens
            again, up to ``circuit_max_backoff``.
        failed_ttl: how long a failed delivery is kept.
        expiring_lead: how long before a pause's expiry ``pause.expiring`` is sent
            (or a tenth of its lifetime, if shorter).
        inbox_url: the web inbox's base URL, to link each pause to.
    """

    timeout: float = 10.0
    retry_schedule: Sequence[float] = RETRY_SCHEDULE
    max_attempts: int | None = None
    jitter: float = JITTER
    lease: float | None = None
    poll_interval: float = 0.25
    concurrency: int = 64
    per_destination: int = 8
    batch: int = 32
    circuit_failures: int = 5
    circuit_backoff: float = 5.0
    circuit_max_backoff: float = 300.0
    failed_ttl: float = FAILED_TTL
    expiring_lead: float = 3600.0
    inbox_url: str | None = None

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.poll_interval <= 0 or self.concurrency < 1:
            raise ConfigurationError("webhook timeout, poll interval and concurrency must be > 0")
        if self.per_destination < 1 or self.batch < 1 or self.circuit_failures < 1:
            raise ConfigurationError(
                "webhook per_destination, batch and circuit_failures must be at least 1"
            )
        if not 0 < self.circuit_backoff <= self.circuit_max_backoff:
            raise ConfigurationError(
                "the webhook circuit backoff must be > 0 and at most its maximum"
            )
        if self.failed_ttl <= 0:
            raise ConfigurationError("failed webhook deliveries must be kept for some time")
        if not self.retry_schedule or any(delay < 0 for delay in self.retry_schedule):
            raise ConfigurationError("the webhook retry schedule needs delays of 0 s or more")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ConfigurationError("webhook max_attempts must be at least 1")
        if not 0 <= self.jitter < 1:
            raise ConfigurationError("webhook jitter is a fraction between 0 and 1")
        if self.lease is not None and self.lease <= self.timeout:
            raise ConfigurationError("the webhook lease must be longer than its timeout")

    @property
    def attempts(self) -> int:
        return len(self.retry_schedule) + 1 if self.max_attempts is None else self.max_attempts

    @property
    def lease_seconds(self) -> float:
        """Long enough for a request to time out and its outcome to be written."""
        return self.lease if self.lease is not None else max(self.timeout * 2, self.timeout + 2)

    def delay_after(self, attempt: int) -> float:
        """The scheduled delay after failed attempt number ``attempt`` (1-based), unjittered."""
        schedule = self.retry_schedule
        return float(schedule[min(attempt, len(schedule)) - 1])
