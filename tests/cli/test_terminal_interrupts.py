"""Ctrl-C at each prompt of ``symfonic chat`` and ``symfonic pauses``, in a real terminal.

An interrupt must end the client there and then: a line of words saying what
was left as it was, the shell's prompt on a fresh line, exit code 130, and the
pause still waiting for an answer, never a key swallowed or an answer half-sent.
And a pause answered by someone else while ``symfonic pauses`` asks about it is
reported with who answered it and when, and the command fails.

Every test asks as its own principal, so each client lists only its own pauses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from serve_support import serving
from terminal_support import Screen, client_env

pytestmark = pytest.mark.slow

PEOPLE = [f"p{n}" for n in range(12)]
APPROVAL = "[a]pprove, [e]dit, [r]eject, [d]ecline"
STILL_WAITING = "interrupted; the pause is still waiting, nothing was answered; answer it later "


def _still_waiting(service: str) -> str:
    return f"{STILL_WAITING}with 'symfonic pauses' or in the inbox at {service}/inbox."


def _key(who: str) -> str:
    return f"{who}-terminal-key"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("interrupts")
    keys = ",".join(f"{who}={_key(who)}" for who in PEOPLE)
    with serving(f"sqlite:///{folder / 'c.db'}", folder / "server.log", keys=keys) as server:
        yield server.url


def _api(service: str, who: str) -> httpx.Client:
    return httpx.Client(base_url=service, headers={"Authorization": f"Bearer {_key(who)}"})


def _pending(service: str, who: str) -> list[dict[str, Any]]:
    with _api(service, who) as api:
        return list(api.get("/v1/pauses", params={"state": "pending"}).json()["pauses"])


def _paused(service: str, who: str) -> dict[str, Any]:
    """A pause of ``who``'s, asked through the API: approve paying bob."""
    with _api(service, who) as api:
        session = api.post("/v1/sessions", json={}).json()["session_id"]
        api.post(f"/v1/sessions/{session}/turns", json={"message": "Pay bob 9 EUR"})
    [pause] = _pending(service, who)
    return pause


def _ended_by_interrupt(client: Screen, said: str) -> None:
    client.interrupt()
    assert client.finish() == 130
    assert client.text.endswith(f"symfonic {said}\n"), client.text  # the shell starts afresh
    assert "Traceback" not in client.text


CHAT_PROMPTS = {
    "message": ([], "you: ", "chat: interrupted; nothing was sent."),
    "choice": (["Pay bob 9 EUR"], f"{APPROVAL}, or [x] abandon? ", "chat: "),
    "edit-field": (["Pay bob 9 EUR", "e", ""], "amount [9]: ", "chat: "),
    "reason": (["Pay bob 9 EUR", "r"], "reason: ", "chat: "),
}


@pytest.mark.parametrize("at", list(CHAT_PROMPTS))
def test_ctrl_c_at_each_chat_prompt_ends_in_words_and_leaves_the_pause(
    at: str, service: str
) -> None:
    who = PEOPLE[list(CHAT_PROMPTS).index(at)]
    typed, prompt, said = CHAT_PROMPTS[at]
    chat = Screen("chat", "--url", service, env=client_env(_key(who)))
    chat.wait_for("you: ")
    if typed:
        chat.type(*typed)
        chat.wait_for(prompt)
    _ended_by_interrupt(chat, said if at == "message" else said + _still_waiting(service))
    pending = _pending(service, who)
    if at == "message":
        assert pending == []
        return
    [pause] = pending  # still waiting, and no second pause was asked for
    session = re.search(r"session (\S+) with agent", chat.text)
    assert session is not None and pause["session_id"] == session.group(1)


PAUSES_PROMPTS = {
    "choice": ([], f"{APPROVAL}? "),
    "edit-field": (["e"], "to_iban ["),  # the edit starts from the call's arguments
    "reason": (["r"], "reason: "),
}


@pytest.mark.parametrize("at", list(PAUSES_PROMPTS))
def test_ctrl_c_at_each_pauses_prompt_ends_in_words_and_leaves_the_pause(
    at: str, service: str
) -> None:
    who = PEOPLE[6 + list(PAUSES_PROMPTS).index(at)]
    waiting = _paused(service, who)
    typed, prompt = PAUSES_PROMPTS[at]
    pauses = Screen("pauses", "--url", service, env=client_env(_key(who)))
    pauses.wait_for(f"{APPROVAL}? ")
    if typed:
        pauses.type(*typed)
        pauses.wait_for(prompt)
    _ended_by_interrupt(pauses, f"pauses: {_still_waiting(service)}")
    assert [p["pause_id"] for p in _pending(service, who)] == [waiting["pause_id"]]


def test_pauses_says_who_answered_a_pause_first_and_fails(service: str) -> None:
    who = PEOPLE[10]
    waiting = _paused(service, who)
    pauses = Screen("pauses", "--url", service, env=client_env(_key(who)))
    pauses.wait_for(f"{APPROVAL}? ")
    with _api(service, who) as api:  # answered elsewhere (the inbox, a second terminal)
        answered = api.post("/v1/resume", json={"token": waiting["token"],
                                                "answer": {"decision": "approve"}})
        assert answered.status_code == 200
    pauses.type("r", "not this one")
    assert pauses.finish() == 1
    shown = " ".join(pauses.text.split())  # however the line was wrapped
    said = re.search(
        rf"refused: this pause was already answered by {who} at "
        r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC, with a different answer; yours was not used",
        shown,
    )
    assert said is not None, pauses.text
    assert "the service refused" not in shown


def test_pauses_exits_0_when_it_only_lists_or_every_answer_is_taken(tmp_path: Path) -> None:
    with serving(f"sqlite:///{tmp_path / 'l.db'}", tmp_path / "s.log",
                 keys=f"{PEOPLE[11]}={_key(PEOPLE[11])}") as server:
        _paused(server.url, PEOPLE[11])
        listed = Screen("pauses", "--list", "--url", server.url,
                        env=client_env(_key(PEOPLE[11])))
        assert listed.finish() == 0
        answering = Screen("pauses", "--url", server.url, env=client_env(_key(PEOPLE[11])))
        answering.wait_for(f"{APPROVAL}? ")
        answering.type("a")
        assert answering.finish() == 0
