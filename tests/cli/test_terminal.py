"""``symfonic chat`` and ``symfonic pauses`` in a real terminal, against a real ``symfonic serve``.

Each client runs in a pseudo-terminal (pexpect) 80 columns wide, as a person
would run it, talking to a ``symfonic serve`` subprocess on a loopback port.
What the person sees is the pty's output with the terminal's control
sequences taken out; the raw bytes are kept to check for colour.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from http_support import free_port
from symfonic.cli.environment import READS
from symfonic.cli.main import main
from symfonic.cli.terminal import fill
from terminal_support import COLOUR, IBAN, KEY, WIDTH, Screen, client_env

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A keyed ``symfonic serve`` of the demo agent; its URL."""
    folder = tmp_path_factory.mktemp("terminal")
    port = free_port()
    env = {**os.environ, "SYMFONIC_API_KEYS": f"alice={KEY}"}
    command = [sys.executable, "-m", "symfonic", "serve", "--port", str(port),
               "--store", f"sqlite:///{folder / 'chat.db'}", "--log-level", "warning"]
    with (folder / "server.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (folder / "server.log").read_text()
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become healthy"
            time.sleep(0.1)  # nothing to await across a process boundary but the socket
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_chat_pays_after_approval_with_colour_a_thinking_indicator_and_whole_values(
    service: str,
) -> None:
    chat = Screen("chat", "--url", service, env=client_env())
    chat.wait_for("you: ")
    chat.type("Pay alice 42 EUR")
    chat.wait_for("? Approve send_payment?")
    chat.wait_for(f"to_iban   {IBAN}")
    chat.wait_for("[a]pprove, [e]dit, [r]eject, [d]ecline, or [x] abandon? ")
    chat.type("a")
    chat.wait_for("assistant: Done. payment")
    chat.wait_for("you: ")
    assert chat.end() == 0
    assert COLOUR.search(chat.raw), "no colour on a colour terminal"
    assert "thinking…" in chat.text
    lines = chat.text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH  # the terminal never wraps for us
    assert sum(IBAN in line for line in lines) >= 4  # call, result, arguments, answer: whole
    assert "Traceback" not in chat.text


def test_chat_checks_each_edited_field_as_it_is_entered(service: str) -> None:
    chat = Screen("chat", "--url", service, env=client_env())
    chat.wait_for("you: ")
    chat.type("Pay alice 42 EUR")
    chat.wait_for("abandon? ")
    chat.type("e")
    chat.wait_for(f"to_iban [{IBAN}]: ")
    chat.type("")
    chat.wait_for("amount [42]: ")
    chat.type("lots")
    # Said at once, before the next field, and asked again from the value it had.
    chat.wait_for("not accepted: amount must be a number. Type it again.")
    chat.wait_for("amount [42]: ")
    chat.type("7")
    chat.wait_for("currency [EUR]: ")
    chat.type("")
    chat.wait_for("assistant: Done. payment")
    chat.wait_for("sent: 7 EUR to")
    chat.wait_for(IBAN)
    chat.wait_for("you: ")
    assert chat.end() == 0
    assert "amount [lots]" not in chat.text
    assert "currency [EUR]" in chat.text.split("amount [42]: 7", 1)[1]


def test_chat_abandons_a_pause_when_the_person_leaves_it(service: str) -> None:
    chat = Screen("chat", "--url", service, env=client_env())
    chat.wait_for("you: ")
    chat.type("Pay bob 3 EUR")
    chat.wait_for("abandon? ")
    chat.type("x")
    chat.wait_for("your next message abandons it")
    chat.type("Pay carol 2 EUR")  # without abandoning, this would be 409 session_paused
    chat.wait_for("abandon? ")
    chat.type("d")
    chat.wait_for("← send_payment [declined]")
    chat.wait_for("assistant: No answer was given")
    assert chat.end() == 0
    assert "refused" not in chat.text
    with httpx.Client(base_url=service, headers={"Authorization": f"Bearer {KEY}"}) as api:
        abandoned = api.get("/v1/pauses", params={"state": "abandoned"}).json()["pauses"]
        published = api.get("/v1/pauses", params={"state": "published"}).json()["pauses"]
    # The question is the same for both payments; bob's was asked first, and left.
    assert [p["query"] for p in abandoned] == ["Approve send_payment?"]
    assert abandoned[0]["created_at"] < published[-1]["created_at"]


@pytest.mark.parametrize(
    ("key", "said"),
    [
        (None, "needs an API key: set SYMFONIC_API_KEY"),
        ("not-the-key", "does not accept the key in SYMFONIC_API_KEY"),
    ],
)
@pytest.mark.parametrize("command", ["chat", "pauses"])
def test_a_missing_or_wrong_key_is_one_plain_line(
    service: str, command: str, key: str | None, said: str
) -> None:
    client = Screen(command, "--url", service, env=client_env(key))
    assert client.end() == 1
    assert client.text.strip().splitlines() == [
        f"symfonic {command}: the service at {service} {said}"
        + (" to your key" if key is None else "; set it to a key the service was started with")
    ]


@pytest.mark.parametrize("command", ["chat", "pauses"])
def test_a_service_that_is_not_running_is_one_plain_line(command: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    client = Screen(command, "--url", url, env=client_env())
    assert client.end() == 1
    assert client.text.strip().splitlines() == [
        f"symfonic {command}: cannot reach a symfonic service at {url}; start one with "
        "'symfonic serve', or pass --url with the address it serves on"
    ]


def test_an_unknown_agent_is_one_plain_line(service: str) -> None:
    chat = Screen("chat", "--url", service, "--agent", "nope", env=client_env())
    assert chat.end() == 1
    assert chat.text.strip().splitlines() == [
        "symfonic chat: no agent named 'nope'; this service hosts assistant; "
        "name one of them with --agent"
    ]


def test_pauses_shows_a_declined_answer_as_declined(service: str) -> None:
    with httpx.Client(base_url=service, headers={"Authorization": f"Bearer {KEY}"}) as api:
        session = api.post("/v1/sessions", json={}).json()["session_id"]
        api.post(f"/v1/sessions/{session}/turns", json={"message": "Pay bob 9 EUR"})
        pending = api.get("/v1/pauses", params={"state": "pending"}).json()["pauses"]
    pauses = Screen("pauses", "--url", service, env=client_env())
    for _ in pending:
        pauses.wait_for("[d]ecline? ")
        pauses.type("d")
        pauses.wait_for("[declined] no answer was given")
    assert pauses.end() == 0
    assert "[ok]" not in pauses.text


def test_no_color_in_a_terminal_prints_no_colour(service: str) -> None:
    chat = Screen("chat", "--url", service, env=client_env(NO_COLOR="1"))
    chat.wait_for("you: ")
    chat.type("Pay alice 1 EUR")
    chat.wait_for("abandon? ")
    chat.type("r", "not now")
    chat.wait_for("assistant: I did not send the payment.")
    assert chat.end() == 0
    assert not COLOUR.search(chat.raw)


def test_off_a_terminal_the_output_is_the_plain_transcript(service: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "symfonic", "chat", "--url", service],
        input="Pay alice 1 EUR\na\n", capture_output=True, text=True, env=client_env(), timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "assistant: Done. payment" in out.stdout
    assert "\x1b" not in out.stdout and "thinking" not in out.stdout
    # Input is not echoed here, so output runs on after a prompt; every other line
    # is wrapped to the default 80 columns, each IBAN on one line.
    def prompted(line: str) -> bool:
        return "you: " in line or ("? " in line and not line.lstrip().startswith("? "))

    shown = [line for line in out.stdout.splitlines() if not prompted(line)]
    assert max(len(line) for line in shown) <= WIDTH
    assert sum(IBAN in line for line in shown) >= 3


def test_demo_says_what_happened_when_the_turn_does_not_pause(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "symfonic", "demo", "--store", f"sqlite:///{tmp_path / 'd.db'}",
         "--message", "hello"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "the turn finished without pausing; the assistant answered:" in out.stdout
    assert "I can send payments to your contacts" in out.stdout
    assert "nothing to resume" in out.stdout
    assert "None" not in out.stdout + out.stderr


@pytest.mark.parametrize("command", ["chat", "pauses", "demo", "serve"])
def test_each_command_help_names_the_environment_it_reads(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = capsys.readouterr().out
    assert "environment:" in shown
    for name in READS[command]:
        assert name in shown


def test_every_variable_the_code_reads_is_named_in_some_help() -> None:
    source = Path(__file__).parents[2] / "src" / "symfonic"
    read = {
        name
        for path in source.rglob("*.py")
        for name in re.findall(r"environ\.get\(\s*\"([A-Z_]+)\"", path.read_text())
    }
    named = {name for rows in READS.values() for names in rows for name in names.split(", ")}
    assert read and read <= named


def test_fill_never_breaks_inside_an_iban_or_a_json_string() -> None:
    text = f'calls send_payment({{"to_iban": "{IBAN}", "memo": "for the design work"}}) to {IBAN}'
    for width in range(30, 90):
        lines = fill(text, width, indent=4)
        assert " ".join(line.strip() for line in lines) == text
        assert sum(IBAN in line for line in lines) == 2
        assert any('"for the design work"' in line for line in lines)
