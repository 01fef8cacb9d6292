"""What a newcomer meets first, through the installed ``symfonic`` script: each mistake
answered in one line that says what to do, and each way back to a pause that still waits.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from serve_support import Server, console_script, serving
from terminal_support import Screen, client_env

pytestmark = pytest.mark.slow

KEY = "nia-newcomer-key"
APPROVAL = "[a]pprove, [e]dit, [r]eject, [d]ecline"


def symfonic(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SYMFONIC_STORE", "SYMFONIC_API_KEY")}
    return subprocess.run([str(console_script()), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def said_in_one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    return line


@pytest.mark.parametrize("action", ["verify", "export"])
def test_audit_of_a_store_that_does_not_exist_fails_and_creates_nothing(
    action: str, tmp_path: Path
) -> None:
    line = said_in_one_line(symfonic("audit", action, "--store", "sqlite:///typo.db",
                                     cwd=tmp_path), 2)
    assert line == ("symfonic audit: there is no store at sqlite:///typo.db; check --store or "
                    "SYMFONIC_STORE (nothing was created)")
    assert list(tmp_path.iterdir()) == []


def test_a_demo_answer_that_is_no_approval_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    done = symfonic("demo", "--answer", '{"decision": "aprove"}', cwd=tmp_path)
    line = said_in_one_line(done, 2)
    assert line == ('symfonic demo: --answer is not an approval\'s answer: decision must be one '
                    'of "approve", "edit" or "reject"')
    assert done.stdout == "" and list(tmp_path.iterdir()) == []


def test_a_demo_answer_the_resume_refuses_says_the_pause_still_waits(tmp_path: Path) -> None:
    done = symfonic("demo", "--answer", '{"decision": "edit", "args": {"amount": "x"}}',
                    cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "amount must be a number; the pause is still waiting, nothing was answered")


def test_the_demo_transcript_says_what_the_turn_did_after_each_answer(tmp_path: Path) -> None:
    done = symfonic("demo", "--message", "Pay bob for the logo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.split())
    assert '"30 EUR"; the turn went on and asked again' in shown
    assert '{"decision": "approve"}; the turn went on' in shown
    assert '"amount": 30,' in shown and "superseded" not in shown


AGENTS = {
    "broken_agent.py": "agent = (\n",
    "number_agent.py": "agent = 5\n",
}


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("broken_agent:agent",
         "'broken_agent' has a syntax error at {tmp}/broken_agent.py:1: '(' was never closed"),
        ("number_agent:agent", "number_agent:agent is an int, not a SymfonicAgent"),
        ("number_agent.py:agent",
         "'number_agent.py:agent' names a file; name its module: number_agent:agent"),
        ("--store=sqlite:///nowhere/s.db",
         "the directory {tmp}/nowhere does not exist; create it or change --store"),
    ],
    ids=["syntax-error", "not-an-agent", "file-not-module", "sqlite-missing-dir"],
)
def test_serve_says_each_start_up_mistake_in_one_line_with_exit_2(
    spec: str, says: str, tmp_path: Path
) -> None:
    for name, source in AGENTS.items():
        (tmp_path / name).write_text(source)
    line = said_in_one_line(symfonic("serve", spec, cwd=tmp_path), 2)
    assert line.startswith("symfonic serve: ") and says.format(tmp=tmp_path) in line


@pytest.mark.postgres
def test_serve_on_a_postgres_database_that_does_not_exist_suggests_createdb(
    postgres_url: str, tmp_path: Path
) -> None:
    missing = f"{postgres_url}_missing"
    name = missing.rpartition("/")[2]
    line = said_in_one_line(symfonic("serve", "--store", missing, cwd=tmp_path), 2)
    assert f"Create it (createdb {name})" in line and "running" not in line


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("newcomer")
    with serving(f"sqlite:///{folder / 'n.db'}", folder / "server.log", keys=f"nia={KEY}",
                 program=[console_script()]) as running:
        yield running


def _api(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY}"})


def _paused(server: Server, message: str) -> dict[str, Any]:
    """A session whose turn waits for nia's approval; its pause."""
    with _api(server) as api:
        session = api.post("/v1/sessions", json={}).json()["session_id"]
        api.post(f"/v1/sessions/{session}/turns", json={"message": message})
        [pause] = [p for p in api.get("/v1/pauses").json()["pauses"]
                   if p["session_id"] == session]
    return dict(pause)


def _answered(server: Server) -> None:
    """Approve whatever still waits, so the next test starts with nothing waiting."""
    with _api(server) as api:
        for pause in api.get("/v1/pauses").json()["pauses"]:
            api.post("/v1/resume", json={"token": pause["token"],
                                         "answer": {"decision": "approve"}})


def test_serve_says_where_the_inbox_and_the_docs_are_and_a_browser_lands_in_the_inbox(
    server: Server,
) -> None:
    assert server.output().splitlines()[1] == (
        f"symfonic serve: answer pauses at {server.url}/inbox; API docs at {server.url}/docs")
    landed = httpx.get(f"{server.url}/", follow_redirects=True)
    assert landed.status_code == 200 and str(landed.url) == f"{server.url}/inbox"
    assert "text/html" in landed.headers["content-type"]


def test_pauses_takes_an_address_without_a_scheme_and_words_the_listing_as_the_inbox(
    server: Server, tmp_path: Path
) -> None:
    address = server.url.removeprefix("http://")
    empty = Screen("pauses", "--list", "--url", address, env=client_env(KEY))
    assert empty.finish() == 0
    assert empty.text.strip() == "Nothing is waiting for you."
    _paused(server, "Pay bob 15 EUR")
    listed = Screen("pauses", "--list", "--url", address, env=client_env(KEY))
    assert listed.finish() == 0
    assert re.search(r"expires in (23 h 59 min|1 d)", listed.text), listed.text
    assert ["amount", "15"] in [line.split() for line in listed.text.splitlines()]
    _answered(server)


def test_chat_session_goes_back_to_a_session_and_asks_its_waiting_pause(server: Server) -> None:
    pause = _paused(server, "Pay carol 4 EUR")
    chat = Screen("chat", "--url", server.url, "--session", pause["session_id"],
                  env=client_env(KEY))
    chat.wait_for(f"session {pause['session_id']} with agent assistant")
    chat.wait_for(f"{APPROVAL}, or [x] abandon? ")
    chat.type("a")
    chat.wait_for("assistant: Done. payment")
    chat.wait_for("you: ")
    chat.type("Pay alice 2 EUR")  # the same session goes on
    chat.wait_for("abandon? ")
    chat.type("d")
    chat.wait_for("you: ")
    assert chat.end() == 0
    with _api(server) as api:
        session = api.get(f"/v1/sessions/{pause['session_id']}").json()
    said = [m["content"] for m in session["messages"] if m["role"] == "human"]
    assert said == ["Pay carol 4 EUR", "Pay alice 2 EUR"]


def test_question_mark_explains_each_choice_and_ctrl_d_leaves_the_pause_as_ctrl_c_does(
    server: Server,
) -> None:
    chat = Screen("chat", "--url", server.url, env=client_env(KEY))
    chat.wait_for("you: ")
    chat.type("Pay bob 6 EUR")
    chat.wait_for("abandon? ")
    chat.type("?")
    for choice in ("approve: run the call as shown", "edit: change its arguments, then run it",
                   "reject: do not run it; the agent is told, with your reason",
                   "decline: give no answer; the agent is told none was given",
                   "abandon: leave it waiting; your next message abandons it"):
        chat.wait_for(choice)
    chat.wait_for("abandon? ")
    chat.child.sendeof()
    assert chat.finish() == 130
    assert chat.text.endswith(
        "symfonic chat: interrupted; the pause is still waiting, nothing was answered; answer "
        f"it later with 'symfonic pauses' or in the inbox at {server.url}/inbox.\n")
    with _api(server) as api:
        assert [p["query"] for p in api.get("/v1/pauses").json()["pauses"]] == [
            "Approve send_payment?"]
    _answered(server)
