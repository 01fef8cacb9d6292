"""``SymfonicClient`` against a real ``symfonic serve`` process, on SQLite and PostgreSQL.

The blocking client does what the async one does, through the same requests:
the demo agent's payment is asked about, listed with its details, answered
once, and a second, different answer is refused with the Python API's type.
"""

from __future__ import annotations

import re
from contextlib import closing
from pathlib import Path

import pytest

from serve_support import KEYS, serving
from symfonic import PauseAlreadyAnswered
from symfonic.client import ApiError, PauseChange, PauseFilter, PauseSnapshot, SymfonicClient
from symfonic.core.contracts.types import ErrorEvent, ResponseCompleteEvent, TurnPausedEvent

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


def readme_example() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("\n### The Python client\n")
    [code] = re.findall(
        r"```python\n(.*?)```", readme[start : readme.index("\n### ", start + 1)], re.DOTALL
    )
    return code


def test_the_readmes_client_example_runs_as_written(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = readme_example()
    with serving(sqlite_url, tmp_path / "serve.log", keys="alice=key1") as server:
        exec(compile(code.replace("http://127.0.0.1:8000", server.url), "README", "exec"), {})
    out = capsys.readouterr().out.split()
    paused = out.index("turn.paused")
    assert out[0] == "turn.started" and "tool.call" in out[:paused]
    assert out[paused + 1] == "complete" and "Done." in out
