"""The live pause feed works while an OpenTelemetry SDK is recording, on both stores.

With an SDK installed before the agent opens, the agent wraps its store in the
traced store, and the service's feed watches that wrapper. The watch must
still be the store's stream of changes: a client following
``GET /v1/pauses/events`` sees a pause made after it connected arrive as
``pause.created``, under real uvicorn.
"""

from __future__ import annotations

import pytest

from feed_support import following
from http_support import KEYS, auth, paused_turn, payment_agent, uvicorn_serving
from otel_support import Recorded, attributes, otel
from symfonic.core.telemetry import names
from symfonic.server.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
__all__ = ["otel"]  # the fixture, used by name

ALICE = auth("alice")


async def test_a_pause_made_after_the_feed_opened_arrives_while_traced(
    store_url: str, otel: Recorded
) -> None:
    app = create_app(payment_agent(store_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client, following(client, ALICE) as feed:
        snapshot = await feed.next()
        assert snapshot.event == "pauses.snapshot" and snapshot.data["pauses"] == []

        _, paused = await paused_turn(client, ALICE)
        created = await feed.until("pause.created", paused["pause_id"])
        assert int(created.id) > int(snapshot.id)
        assert created.data["state"] == "pending" and created.data["agent"] == "assistant"
        assert created.data["pause"]["token"] == paused["pause_token"]

    # The pause went through the traced store: the feed above watched that wrapper.
    recorded = [attributes(span).get(names.PAUSE_ID) for span in otel.named(names.PAUSE)]
    assert paused["pause_id"] in recorded
