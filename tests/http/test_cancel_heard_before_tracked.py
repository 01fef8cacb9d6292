"""A run this worker starts is stopped by a cancel the store's watch heard a moment before
the worker tracked the run: a queued message taken here while another worker interrupted
its session never goes on to its tools.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.run_events import NewRun
from symfonic.core.contracts.store import RunRequest, SessionRecord, Store
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.runs import WorkerRuns
from symfonic.storage import open_store
from symfonic.testing import ScriptedChatModel, reply
from symfonic.turns.background import RunHandle

pytestmark = pytest.mark.anyio


class ObservedHandle(RunHandle):
    """A run's handle that says when this worker stopped it."""

    def __init__(self, run_id: str, session_id: str) -> None:
        super().__init__(run_id, session_id)
        self.stopped = anyio.Event()

    def stop(self) -> None:
        self.stopped.set()
        super().stop()


async def running(store: Store) -> str:
    """A first turn's run, holding its session's run marker and keeping its events."""
    now, later = datetime.now(UTC), datetime.now(UTC) + timedelta(minutes=1)
    session_id, run_id = uuid.uuid4().hex, uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, "ann", "assistant", 0, {}, now))
    assert await store.begin_run(RunRequest(session_id, run_id, now=now, lease_until=later))
    await store.begin_run_log(NewRun(run_id, session_id, "ann", now, later))
    return run_id


async def test_a_run_tracked_just_after_its_cancel_was_heard_is_stopped(store_url: str) -> None:
    agent = SymfonicAgent(model=ScriptedChatModel(respond=lambda _: reply("hi")), store=store_url)
    host = ServiceHost([agent], store=store_url)
    await host.open()
    runs = WorkerRuns(host)
    try:
        async with anyio.create_task_group() as tasks, open_store(store_url) as other:
            await tasks.start(runs.run)
            runs.track(RunHandle(uuid.uuid4().hex, "s"))  # a run here, so the watch listens
            await anyio.sleep(0.5)
            run_id = await running(other)
            # Another worker cancels the run; this worker's watch hears it, tracking nothing.
            assert await other.cancel_run(run_id, datetime.now(UTC))
            await anyio.sleep(0.5)
            handle = ObservedHandle(run_id, "s")
            runs.track(handle)
            with anyio.fail_after(5):
                await handle.stopped.wait()
            tasks.cancel_scope.cancel()
    finally:
        await host.aclose()
