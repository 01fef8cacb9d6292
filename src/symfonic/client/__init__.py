"""A typed Python client for symfonic's HTTP API, sync and async, on httpx: it streams the
events and raises the exception types the Python API does, and depends on the contracts alone.
"""

from symfonic.client.async_client import AsyncSymfonicClient
from symfonic.client.calls import PauseFilter
from symfonic.client.errors import ApiError, ServiceUnreachable
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
    "ServiceUnreachable",
    "Session",
    "SessionCreated",
    "SymfonicClient",
]
