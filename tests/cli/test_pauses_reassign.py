"""``symfonic pauses reassign`` against a real ``symfonic serve``, as an operator runs it.

An operator's key hands a pending pause to another audience and the command
says to whom; anyone else's is refused (403) and a pause no longer waiting
cannot be handed over (409), each said in one line on stderr with exit code 1.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from serve_support import serving
from symfonic.cli.main import main

KEYS = "alice=key-alice,fay=key-fay:finance,olga=key-olga:operator"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def pending(api: httpx.Client, key: str) -> list[dict[str, object]]:
    listed = api.get("/v1/pauses", params={"state": "pending"}, headers=bearer(key))
    assert listed.status_code == 200, listed.text
    return list(listed.json()["pauses"])


def test_an_operator_reassigns_a_pause_and_others_are_told_why_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:///{tmp_path / 'pauses.db'}"
    with (
        serving(store, tmp_path / "server.log", keys=KEYS) as server,
        httpx.Client(base_url=server.url, timeout=30) as api,
    ):
        session = api.post("/v1/sessions", json={}, headers=bearer("key-alice"))
        session_id = session.json()["session_id"]
        api.post(
            f"/v1/sessions/{session_id}/turns",
            json={"message": "Pay bob 7 EUR"},
            headers=bearer("key-alice"),
        )
        (pause,) = pending(api, "key-alice")
        pause_id = str(pause["pause_id"])
        command = ["pauses", "reassign", pause_id, "--audience", "finance",
                   "--reason", "alice is away", "--url", server.url]

        monkeypatch.setenv("SYMFONIC_API_KEY", "key-alice")
        assert main(command) == 1
        assert capsys.readouterr().err.strip() == (
            "symfonic pauses: the service refused: alice may not reassign pauses: "
            "that needs the operator scope"
        )
        assert [p["pause_id"] for p in pending(api, "key-fay")] == []

        monkeypatch.setenv("SYMFONIC_API_KEY", "key-olga")
        assert main(command) == 0
        assert capsys.readouterr().out.strip() == (
            f"pause {pause_id} is now for finance: {pause['query']}"
        )
        (handed,) = pending(api, "key-fay")
        assert pending(api, "key-alice") == []

        answered = api.post(
            "/v1/resume",
            json={"token": handed["token"], "answer": {"decision": "approve"}},
            headers={**bearer("key-fay"), "Accept": "application/json"},
        )
        assert answered.status_code == 200, answered.text
        assert main(command) == 1
        assert capsys.readouterr().err.strip() == (
            f"symfonic pauses: the service refused: pause {pause_id} is no longer "
            "waiting for an answer, so it cannot be reassigned"
        )
