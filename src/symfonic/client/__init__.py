"""A typed Python client for symfonic's HTTP API, sync and async, on httpx.
It speaks as the Python API does: turns stream the typed events of
`symfonic.core.contracts.types` or return a `TurnResult`, and a refusal raises the same
exception type (`PauseExpired`, ...), each also an `ApiError`.
"""

from symfonic.client.async_client import AsyncSymfonicClient
from symfonic.client.calls import PauseFilter
from symfonic.client.errors import ApiError
from symfonic.client.events import FeedEvent, PauseChange, PauseSnapshot
from symfonic.client.models import (
    Delivery,
    Destination,
    Health,
    Message,
    Pause,
    PausePage,
    Run,
    RunOutcome,
    RunStarted,
    Session,
    SessionCreated,
)
from symfonic.client.sync_client import SymfonicClient

__all__ = [
    "ApiError",
    "AsyncSymfonicClient",
    "Delivery",
    "Destination",
    "FeedEvent",
    "Health",
    "Message",
    "Pause",
    "PauseChange",
    "PauseFilter",
    "PausePage",
    "PauseSnapshot",
    "Run",
    "RunOutcome",
    "RunStarted",
    "Session",
    "SessionCreated",
    "SymfonicClient",
]
