"""The pending gauge counts every waiting pause, by agent and kind, on both stores.

An operator alerts on ``symfonic.pauses.pending`` when work piles up: the count
must stay exact past ten thousand waiting pauses (where a capped read stopped
counting) and keep each agent's and each kind's apart.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from bench.scale_load import Layout, load_pending
from opentelemetry.metrics import CallbackOptions

from symfonic.core.telemetry import names
from symfonic.server.service.pending_pauses_gauge import PendingPauses
from symfonic.storage import open_store

pytestmark = pytest.mark.anyio

NOW = datetime.now(UTC)


async def test_the_gauge_counts_past_ten_thousand_by_agent_and_kind(store_url: str) -> None:
    layouts = [
        Layout(10_050, created=NOW, agent="payments", kind="approval"),
        Layout(7, start=20_000, created=NOW, agent="payments", kind="input"),
        Layout(3, start=30_000, created=NOW, agent="support", kind="approval"),
        # Expired by the sweep below: no longer waiting, so not counted.
        Layout(5, start=40_000, created=NOW - timedelta(days=2), expires_in=timedelta(days=1),
               agent="support", kind="approval"),
    ]
    async with open_store(store_url) as store:
        for layout in layouts:
            await load_pending(store_url, layout)
        await store.sweep(NOW)
        gauge = PendingPauses()
        await gauge.refresh(store)
    counted = {
        (point.attributes[names.AGENT], point.attributes[names.INTERACTION_KIND]): point.value
        for point in gauge.observe(CallbackOptions())
        if point.attributes is not None
    }
    assert counted == {
        ("payments", "approval"): 10_050,
        ("payments", "input"): 7,
        ("support", "approval"): 3,
    }
