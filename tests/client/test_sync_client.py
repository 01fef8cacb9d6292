"""``SymfonicClient`` against a real ``symfonic serve`` process, on SQLite and PostgreSQL.

The blocking client does what the async one does, through the same requests:
the demo agent's payment is asked about, listed with its details, answered
once, and a second, different answer is refused with the Python API's type.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from http_support import free_port
from serve_support import KEYS, serving
from symfonic import PauseAlreadyAnswered
from symfonic.client import (
    ApiError,
    PauseChange,
    PauseFilter,
    PauseSnapshot,
    Run,
    RunStarted,
    SymfonicClient,
)
from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.types import (
    ErrorEvent,
    ResponseCompleteEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.demo import demo_agent

pytestmark = pytest.mark.slow


def test_the_blocking_client_pays_once_against_a_real_server(
    store_url: str, tmp_path: Path
) -> None:
    with (
        serving(store_url, tmp_path / "serve.log", keys=KEYS) as server,
        SymfonicClient(server.url, api_key="alice-secret-key") as client,
    ):
        session = client.create_session()
        *_, paused = client.stream("Pay bob 7 EUR", session.session_id)
        assert isinstance(paused, TurnPausedEvent) and paused.query.startswith("Approve")

        [listed] = list(client.iter_pauses(PauseFilter(details=True)))
        assert listed.pause_id == paused.pause_id and listed.token == paused.pause_token
        assert listed.tool_name == "send_payment" and listed.tool_args
        assert listed.tool_args["amount"] == 7

        with closing(client.pause_feed()) as feed:
            snapshot = next(feed)
        assert isinstance(snapshot, PauseSnapshot) and snapshot.total == 1

        *_, done = client.resume_stream(paused.pause_token, {"decision": "approve"})
        assert isinstance(done, ResponseCompleteEvent) and not isinstance(done, ErrorEvent)
        with pytest.raises(PauseAlreadyAnswered) as refused:
            client.resume(paused.pause_token, {"decision": "reject"})
        assert refused.value.code == "already_answered"
        assert client.list_pauses().pauses == []
        with pytest.raises(ApiError) as operator_only:
            client.webhook_deliveries()
        assert operator_only.value.status == 403


def test_the_feed_says_who_answered_and_how(store_url: str, tmp_path: Path) -> None:
    with (
        serving(store_url, tmp_path / "serve.log", keys=KEYS) as server,
        SymfonicClient(server.url, api_key="alice-secret-key") as client,
    ):
        paused = client.run("Pay bob 7 EUR").pause
        assert paused is not None
        with closing(client.pause_feed()) as feed:
            assert isinstance(next(feed), PauseSnapshot)
            client.resume(paused.token, {"decision": "reject"})
            changes = [next(feed), next(feed)]
        assert all(isinstance(change, PauseChange) for change in changes)
        assert [(c.type, c.answered_by) for c in changes] == [
            ("pause.claimed", "alice"),
            ("pause.answered", "alice"),
        ]
        assert isinstance(changes[1], PauseChange) and changes[1].decision == "reject"


def ended(client: SymfonicClient, run_id: str) -> Run:
    """The run once it is recorded ended, which may come just after its terminal event."""
    deadline = time.monotonic() + 5
    while (run := client.get_run(run_id)).state is RunState.RUNNING:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.02)
    return run


def test_the_blocking_client_runs_a_turn_in_the_background(sqlite_url: str, tmp_path: Path) -> None:
    with (
        serving(sqlite_url, tmp_path / "serve.log", keys=KEYS) as server,
        SymfonicClient(server.url, api_key="alice-secret-key") as client,
        SymfonicClient(server.url, api_key="carol-secret-key") as carol,
    ):
        started = client.start("Pay bob 7 EUR")
        *_, paused = client.run_events(started.run_id)
        assert isinstance(paused, TurnPausedEvent) and paused.pause_token
        assert ended(client, started.run_id).state is RunState.PAUSED
        with pytest.raises(ApiError) as hidden:
            carol.get_run(started.run_id)
        assert (hidden.value.status, hidden.value.code) == (404, "run_not_found")

        resumed = client.start_resume(paused.pause_token, {"decision": "approve"})
        assert isinstance(resumed, RunStarted)
        *_, done = client.run_events(resumed.run_id)
        assert isinstance(done, ResponseCompleteEvent) and not isinstance(done, ErrorEvent)
        # Replayed from after the first event, to the same end.
        again = list(client.run_events(resumed.run_id, last_event_id="1"))
        assert again[-1] == done and not isinstance(again[0], TurnStartedEvent)
        assert ended(client, resumed.run_id).state is RunState.COMPLETE
        with pytest.raises(ApiError) as refused:
            client.cancel_run(resumed.run_id)
        assert (refused.value.status, refused.value.code) == (409, "run_not_running")


def guide_example() -> str:
    guide = (Path(__file__).resolve().parents[2] / "docs/guides/client.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
    return code


def test_the_client_guides_example_runs_as_written(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = guide_example()
    with serving(sqlite_url, tmp_path / "serve.log", keys="alice=key1") as server:
        exec(
            compile(code.replace("http://127.0.0.1:8000", server.url), "guides/client.md", "exec"),
            {},
        )
    out = capsys.readouterr().out.split()
    paused = out.index("turn.paused")
    assert out[0] == "turn.started" and "tool.call" in out[:paused]
    assert out[paused + 1] == "complete" and "Done." in out


def test_the_feed_follows_a_restarted_server_and_misses_nothing(
    store_url: str, tmp_path: Path
) -> None:
    """The server goes away, a pause is made while it is down, another process
    serves the same store on the same port: the open feed reconnects by itself
    with ``Last-Event-ID`` and reads that pause's creation, not a new snapshot."""
    port = free_port()
    seen: queue.Queue[PauseSnapshot | PauseChange | BaseException] = queue.Queue()
    made: list[str] = []

    def follow(client: SymfonicClient) -> None:
        try:
            with closing(client.pause_feed(attempts=12)) as feed:
                for event in feed:
                    seen.put(event)
                    if isinstance(event, PauseChange) and event.pause_id in made:
                        return
        except BaseException as error:
            seen.put(error)

    with SymfonicClient(f"http://127.0.0.1:{port}", api_key="alice-secret-key") as client:
        with serving(store_url, tmp_path / "first.log", keys=KEYS, port=port):
            before = client.run("Pay bob 7 EUR").pause
            assert before is not None
            follower = threading.Thread(target=follow, args=(client,), daemon=True)
            follower.start()
            snapshot = seen.get(timeout=30)
            assert isinstance(snapshot, PauseSnapshot)
            assert [p.pause_id for p in snapshot.pauses] == [before.pause_id]
        made.append(anyio.run(pause_in_process, store_url))
        with serving(store_url, tmp_path / "second.log", keys=KEYS, port=port):
            follower.join(timeout=90)
    after = [seen.get_nowait() for _ in range(seen.qsize())]
    assert after and all(isinstance(event, PauseChange) for event in after), after
    last = after[-1]
    assert isinstance(last, PauseChange) and last.pause_id == made[0]
    assert last.type == "pause.created" and last.pause is not None and last.pause.token


async def pause_in_process(store_url: str) -> str:
    """A payment asked of alice through the Python API, with no server running."""
    async with demo_agent(store_url) as agent:
        result = await agent.run("Pay alice 5 EUR", principal="alice")
    assert result.pause is not None
    return result.pause.pause_id
