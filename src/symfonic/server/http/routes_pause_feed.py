"""`GET /v1/pauses/events`: the pauses a caller may answer, live, as Server-Sent Events: a
snapshot or a replay from `Last-Event-ID`, then one frame per change.
"""

import json
import logging
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.sse import format_sse_event
from starlette.responses import Response

from symfonic.core.contracts.errors import FeedUnavailable, StoreUnavailable
from symfonic.core.contracts.pause_views import PauseView
from symfonic.server.http.feed_schemas import (
    CHANGE_EVENTS,
    READDRESSED_EVENTS,
    SNAPSHOT_EVENT,
    PauseChangeEvent,
    PauseSnapshot,
    event_of,
)
from symfonic.server.http.pause_cursor import encode_cursor
from symfonic.server.http.pause_details import detailed
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host, Service
from symfonic.server.http.sse import FrameStream
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.pause_feed import (
    FeedChange,
    FeedItem,
    FeedSubscription,
    PauseFeed,
)
from symfonic.server.transport.errors import documented
from symfonic.server.transport.stream_shares import StreamSlot
from symfonic.server.transport.streaming import PING_INTERVAL

logger = logging.getLogger("symfonic.http")

STREAM_DESCRIPTION = (
    "The pauses the caller may answer, live: first a `pauses.snapshot`, the first page "
    "of `GET /v1/pauses` with its `total` and `next_cursor` (or, with a "
    "`Last-Event-ID` the store can still replay from, the changes after it), then one "
    "frame per change. `id:` is the store's change position; a `: keep-alive` comment "
    "goes out every 15 s. The stream stays open until the client leaves."
)


def _position(last_event_id: str | None) -> int | None:
    """The position a reconnecting client names; anything else starts from a snapshot."""
    if last_event_id is None or not last_event_id.strip().isdigit():
        return None
    return int(last_event_id.strip())


def _frame(event: str, data: dict[str, Any], position: int) -> bytes:
    return format_sse_event(
        data_str=json.dumps(data, separators=(",", ":")), event=event, id=str(position)
    )


def feed_responses() -> dict[int | str, dict[str, Any]]:
    """The 200 of the feed: an event stream, one schema per frame type."""

    def frame(events: list[str], model: type) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["event", "data", "id"],
            "properties": {
                "event": {"enum": events},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": f"#/components/schemas/{model.__name__}"},
                },
                "id": {"type": "string", "description": "The store's change position."},
            },
        }

    changes = sorted([*CHANGE_EVENTS.values(), *READDRESSED_EVENTS.values()])
    return {
        200: {
            "description": STREAM_DESCRIPTION,
            "content": {
                "text/event-stream": {
                    "schema": {"type": "string"},
                    "itemSchema": {
                        "oneOf": [
                            frame([SNAPSHOT_EVENT], PauseSnapshot),
                            frame(changes, PauseChangeEvent),
                        ]
                    },
                }
            },
        }
    }


class PauseFeedStream(FrameStream):
    """One subscription as an SSE response; the client leaving closes it.

    With ``details``, each pause a frame carries has its gated call and recent
    messages, as ``GET /v1/pauses?details=true`` gives them: one checkpoint read
    per pause sent, paid only by subscribers that ask (the inbox).
    """

    def __init__(
        self,
        subscription: FeedSubscription,
        host: ServiceHost,
        *,
        details: bool = False,
        slot: StreamSlot | None = None,
        ping_interval: float = PING_INTERVAL,
    ) -> None:
        super().__init__(subscription, slot=slot, ping_interval=ping_interval)
        self._subscription = subscription
        self._host = host
        self._details = details

    async def _frames(self) -> AsyncGenerator[bytes, None]:
        try:
            async for item in self._subscription:
                yield await self._encode(item)
        except (StoreUnavailable, FeedUnavailable) as error:
            # The stream ends; the client reconnects with its Last-Event-ID.
            logger.warning("a pause feed ended, the store could not be read: %s", error)

    async def _views(self, views: list[PauseView]) -> list[PauseView]:
        return await detailed(self._host.store, views) if self._details else views

    async def _encode(self, item: FeedItem) -> bytes:
        signer = self._host.agent(None)
        if isinstance(item, FeedChange):
            change = item.change
            token = signer.token_for(change.pause) if item.answerable else None
            [view] = await self._views([PauseView.of(change.pause, token)])
            data = PauseChangeEvent.data_of(item, token, view)
            return _frame(event_of(change), data, change.position)
        page = item.page
        views = [PauseView.of(pause, signer.token_for(pause)) for pause in page.pauses]
        snapshot = PauseSnapshot(
            pauses=await self._views(views),
            total=page.total,
            next_cursor=None if page.next is None else encode_cursor(page.next),
        ).model_dump(mode="json")
        return _frame(SNAPSHOT_EVENT, snapshot, item.position)


router = APIRouter(prefix="/v1", route_class=AuthenticatingRoute)


@router.get(
    "/pauses/events",
    response_model=None,
    responses={**feed_responses(), **documented(401, 429, 503)},
    tags=["pauses"],
    summary="The pauses the caller may answer, live (Server-Sent Events)",
)
async def pause_events(
    request: Request,
    principal: Caller,
    host: Host,
    service: Service,
    last_event_id: Annotated[
        str | None,
        Header(description="The last `id:` received: resume the feed after it."),
    ] = None,
    details: Annotated[
        bool,
        Query(
            description="Give each pause in a snapshot or `pause.created` its "
            "`tool_name`, `tool_args` and `recent_messages`, as the listing's "
            "`details=true` does (one read per pause)."
        ),
    ] = False,
) -> Response:
    # A feed waiting for its next change is idle: past the connection cap it is
    # what gives way first (symfonic.server.transport.stream_shares).
    slot = service.shares.acquire(principal, request.scope, idle=True)
    feed: PauseFeed = request.app.state.pause_feed
    try:
        subscription = await feed.subscribe(principal, _position(last_event_id))
    except BaseException:
        slot.release()
        raise
    return PauseFeedStream(subscription, host, details=details, slot=slot)
