"""``symfonic serve`` as users run it: real uvicorn processes on loopback ports."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from http_support import APPROVE, JSON, frames
from serve_support import ALICE, KEYS, serving
from symfonic.cli.main import main
from symfonic.cli.serve import freeze_after_startup
from symfonic.cli.serve_banner import startup_line as _startup_line
from symfonic.cli.serve_listen import is_loopback
from symfonic.demo import demo_agent
from symfonic.server.app import create_app
from symfonic.server.http.auth import Authenticator
from symfonic.server.service.webhooks import Webhook
from webhook_support import SECRET

pytestmark = pytest.mark.slow

MESSAGE = "Pay alice 42 EUR for the design work"


def test_serve_runs_the_demo_agent_and_never_prints_secrets(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'serve.db'}"
    with serving(store, tmp_path / "server.log") as server, httpx.Client(
        base_url=server.url, headers=ALICE
    ) as client:
        created = client.post("/v1/sessions", json={})
        assert created.status_code == 201
        session_id = created.json()["session_id"]
        turn = client.post(f"/v1/sessions/{session_id}/turns", json={"message": MESSAGE})
        assert turn.headers["content-type"].startswith("text/event-stream")
        paused = frames(turn.text)[-1]
        assert paused.event == "turn.paused"
        token = paused.data["pause_token"]
        assert client.get("/v1/health").json()["status"] == "ok"
        denied = client.post("/v1/resume", json={"token": token, "answer": APPROVE},
                             headers={"Authorization": "Bearer wrong"})
        assert denied.status_code == 401
        done = client.post("/v1/resume", json={"token": token, "answer": APPROVE}, headers=JSON)
        assert done.json()["status"] == "complete"
        assert done.json()["answer"].startswith("Done. payment")
        published = client.get("/v1/pauses", params={"state": "published"}).json()["pauses"]
        assert [(p["pause_id"], p["answered_by"]) for p in published] == [
            (paused.data["pause_id"], "alice")
        ]
    output = server.output()
    first = output.splitlines()[0]
    assert first.startswith(f"symfonic serve: {server.url} | store {store} | agents: assistant")
    assert "auth: API keys for alice, carol" in first
    for secret in ["alice-secret-key", "carol-secret-key", token]:
        assert secret not in output


def test_serve_without_keys_refuses_a_public_bind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SYMFONIC_API_KEYS", "")
    store = f"sqlite:///{tmp_path / 'x.db'}"
    for host in ["0.0.0.0", "192.168.1.10", "example.com"]:
        assert main(["serve", "--host", host, "--store", store]) == 2
        assert f"refusing to bind {host} without API keys" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


def test_startup_line_says_how_callers_are_authenticated() -> None:
    agents = [demo_agent()]
    local = _startup_line("127.0.0.1", 8000, "sqlite:///s.db", agents, Authenticator([]), False)
    assert local == (
        "symfonic serve: http://127.0.0.1:8000 | store sqlite:///s.db | agents: assistant "
        "(default assistant) | auth: no API keys; every request runs as principal 'local', "
        "loopback only"
    )
    keyed = _startup_line(
        "::1", 9000, "postgresql://app:hunter2@db/symfonic", agents,
        Authenticator.from_spec(KEYS), False,
    )
    assert "http://[::1]:9000" in keyed and "hunter2" not in keyed and "app:***@db" in keyed
    assert keyed.endswith("auth: API keys for alice, carol")
    assert "secret" not in keyed
    hooks = [Webhook("https://a.example/x?k=1", SECRET), Webhook("https://a.example/x", SECRET)]
    hooked = _startup_line("127.0.0.1", 8000, "sqlite:///s.db", agents, Authenticator([]), False,
                           hooks)
    assert hooked == local + " | webhooks: https://a.example/x (every event)"
    assert [is_loopback(h) for h in ["127.0.0.1", "::1", "localhost", "0.0.0.0", "10.0.0.1"]] == [
        True, True, True, False, False
    ]


@pytest.mark.postgres
def test_a_pause_from_one_process_resumes_in_another(postgres_url: str, tmp_path: Path) -> None:
    with serving(postgres_url, tmp_path / "a.log") as a, serving(
        postgres_url, tmp_path / "b.log"
    ) as b:
        assert a.process.pid != b.process.pid
        session_id = httpx.post(f"{a.url}/v1/sessions", json={}, headers=ALICE).json()[
            "session_id"
        ]
        turn = httpx.post(
            f"{a.url}/v1/sessions/{session_id}/turns", json={"message": MESSAGE},
            headers={**ALICE, **JSON},
        ).json()
        assert turn["status"] == "paused"
        token = turn["pause"]["token"]
        listed = httpx.get(f"{b.url}/v1/pauses", headers=ALICE).json()["pauses"]
        assert [p["token"] for p in listed] == [token]
        resumed = httpx.post(
            f"{b.url}/v1/resume", json={"token": token, "answer": APPROVE}, headers=ALICE
        )
        events = frames(resumed.text)
        assert events[0].data["resumed"] is True
        assert events[-1].event == "response.complete"
        assert events[-1].data["revision"] == 1
        view = httpx.get(f"{a.url}/v1/sessions/{session_id}", headers=ALICE).json()
        assert (view["revision"], view["status"]) == (1, "idle")
        replay = httpx.post(
            f"{a.url}/v1/resume", json={"token": token, "answer": APPROVE},
            headers={**ALICE, **JSON},
        )
        assert replay.json()["revision"] == 1


def test_serve_freezes_what_start_up_left_alive_out_of_full_collections(
    tmp_path: Path,
) -> None:
    app = create_app(demo_agent(), store=f"sqlite:///{tmp_path / 'frozen.db'}")
    freeze_after_startup(app)
    before = gc.get_freeze_count()
    try:
        with TestClient(app) as client:
            # The store opened and the objects start-up left are frozen, not collected.
            assert gc.get_freeze_count() > before
            assert client.get("/v1/health").status_code == 200
    finally:
        gc.unfreeze()
