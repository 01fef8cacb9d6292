"""The operator's surface: ``symfonic serve --webhook`` start-up, ``symfonic webhooks``,
and the committed JSON Schema of every body.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from http_support import free_port
from serve_support import ALICE, serving
from symfonic.cli.main import main
from symfonic.server.service.webhook_dispatch import jittered
from symfonic.server.service.webhook_payloads import json_schema
from symfonic.server.service.webhooks import RETRY_SCHEDULE, WebhookSettings
from webhook_support import SCHEMA_PATH, SECRET, receiving

KEYS = "alice=alice-secret-key,oscar=oscar-secret-key:operator"


def test_the_committed_json_schema_is_the_payload_models() -> None:
    committed = json.loads(SCHEMA_PATH.read_text())
    assert committed == json_schema(), (
        "regenerate docs/webhook-payloads.schema.json from "
        "symfonic.server.service.webhook_payloads.json_schema()"
    )


def test_the_retry_schedule_is_the_documented_one_within_its_jitter() -> None:
    settings = WebhookSettings()
    assert settings.attempts == len(RETRY_SCHEDULE) + 1 == 10
    assert [jittered(settings, n, lambda low, high: low) for n in (1, 2, 3)] == [4.0, 24.0, 96.0]
    assert [jittered(settings, n, lambda low, high: high) for n in (1, 2, 3)] == [6.0, 36.0, 144.0]
    assert settings.delay_after(99) == RETRY_SCHEDULE[-1]
    docs = " ".join((SCHEMA_PATH.parent / "webhooks.md").read_text().split())
    assert "5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h, 12 h" in docs


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        (None, "SYMFONIC_WEBHOOK_SECRET is missing"),
        ("s3cr3t-not-whsec", "SYMFONIC_WEBHOOK_SECRET does not start with whsec_"),
        ("whsec_!!not base64!!",
         "SYMFONIC_WEBHOOK_SECRET is not whsec_ followed by base64 of at least 16 bytes"),
    ],
    ids=["missing", "no-prefix", "not-base64"],
)
def test_a_missing_or_malformed_secret_is_one_line_and_exit_2(
    secret: str | None, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SYMFONIC_API_KEYS", "")
    if secret is None:
        monkeypatch.delenv("SYMFONIC_WEBHOOK_SECRET", raising=False)
    else:
        monkeypatch.setenv("SYMFONIC_WEBHOOK_SECRET", secret)
    store = f"sqlite:///{tmp_path / 's.db'}"
    argv = ["serve", "--store", store, "--port", str(free_port()),
            "--webhook", "http://ops:hunter2@127.0.0.1:9/hook?key=abc"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith("symfonic serve: --webhook http://127.0.0.1:9/hook needs a signing "
                           "secret, and "), line
    assert says in line, line
    # A shell user's words: how to make a secret, never one to paste, never Python's.
    assert line.endswith(
        "; make one with: export SYMFONIC_WEBHOOK_SECRET=whsec_$(head -c 32 /dev/urandom | base64)"
    )
    assert "AAAA" not in line and "secret=" not in line
    assert "Traceback" not in line and "s3cr3t" not in line
    assert "hunter2" not in line and "abc" not in line


def _webhooks_cli(server_url: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYMFONIC_API_KEY": key, "NO_COLOR": "1"}
    command = [sys.executable, "-m", "symfonic", "webhooks", *args, "--url", server_url]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.slow
@pytest.mark.anyio
async def test_symfonic_webhooks_lists_and_resends_in_words(tmp_path: Path) -> None:
    env = {**os.environ, "SYMFONIC_WEBHOOK_SECRET": SECRET}
    store = f"sqlite:///{tmp_path / 's.db'}"
    with receiving() as receiver:
        receiver.status = 500
        hook = ["--webhook", receiver.url, "--webhook-retry", "0.2", "--webhook-timeout", "1"]
        with serving(store, tmp_path / "serve.log", *hook, keys=KEYS, env=env) as server:
            async with httpx.AsyncClient(base_url=server.url, headers=ALICE) as client:
                session = (await client.post("/v1/sessions", json={})).json()["session_id"]
                await client.post(f"/v1/sessions/{session}/turns",
                                  json={"message": "Pay alice 42 EUR"})
            await receiver.wait_for(2, within=3.0)
            await anyio.sleep(0.5)
            listed = _webhooks_cli(server.url, "oscar-secret-key")
            assert listed.returncode == 0, listed.stderr
            line = " ".join(part.strip() for part in listed.stdout.splitlines())  # wrapped
            assert line.startswith("#1 pause.created for pause ")
            assert line.endswith(
                f"to {receiver.url}: failed after 2 attempts: the receiver answered 500"
            )
            refused = _webhooks_cli(server.url, "alice-secret-key")
            assert refused.returncode == 1 and refused.stdout == ""
            assert refused.stderr.strip() == (
                "symfonic webhooks: the service refused: alice may not see webhook "
                "deliveries: that needs the operator scope"
            )
            receiver.status = 200
            resent = _webhooks_cli(server.url, "oscar-secret-key", "resend", "1")
            assert resent.returncode == 0, resent.stderr
            assert " ".join(resent.stdout.split()) == (
                f"delivery #1 (pause.created to {receiver.url}) will be sent again"
            )
            await receiver.wait_for(3, within=2.0)
            await anyio.sleep(0.3)
            quiet = _webhooks_cli(server.url, "oscar-secret-key")
            assert quiet.stdout.strip() == "no failed or pending webhook deliveries"
            missing = _webhooks_cli(server.url, "oscar-secret-key", "resend", "42")
            assert missing.returncode == 1
            assert "no webhook delivery 42" in missing.stderr
            for result in (listed, refused, resent, quiet, missing):
                assert "Traceback" not in result.stderr
    assert len({request.id for request in receiver.received}) == 1


def test_a_webhook_never_shows_its_secret_and_refuses_what_it_cannot_use() -> None:
    from symfonic import ConfigurationError, Webhook

    hook = Webhook("https://chat.example/hook", SECRET, events={"pause.created"})
    assert SECRET not in repr(hook) and SECRET.removeprefix("whsec_") not in repr(hook)
    with pytest.raises(ConfigurationError, match=r"no webhook event 'pause\.made'"):
        Webhook("https://chat.example/hook", SECRET, events={"pause.made"})
    with pytest.raises(ConfigurationError, match="not an http"):
        Webhook("ftp://chat.example/hook", SECRET)
    with pytest.raises(ConfigurationError) as missing:
        Webhook("https://chat.example/hook", "")
    assert "AAAA" not in str(missing.value) and "os.urandom(32)" in str(missing.value)
    with pytest.raises(ConfigurationError, match="lease must be longer"):
        WebhookSettings(timeout=10, lease=5)


@pytest.mark.slow
@pytest.mark.anyio
async def test_symfonic_webhooks_shows_an_open_circuit_in_words(tmp_path: Path) -> None:
    env = {**os.environ, "SYMFONIC_WEBHOOK_SECRET": SECRET}
    store = f"sqlite:///{tmp_path / 's.db'}"
    with receiving() as receiver:
        receiver.status = 500
        retries = ",".join(["0.1"] * 9)
        hook = ["--webhook", receiver.url, "--webhook-retry", retries, "--webhook-timeout", "1"]
        with serving(store, tmp_path / "serve.log", *hook, keys=KEYS, env=env) as server:
            async with httpx.AsyncClient(base_url=server.url, headers=ALICE) as client:
                session = (await client.post("/v1/sessions", json={})).json()["session_id"]
                await client.post(f"/v1/sessions/{session}/turns",
                                  json={"message": "Pay alice 42 EUR"})
            await receiver.wait_for(5, within=5.0)  # five failures in a row open it
            await anyio.sleep(0.5)
            listed = _webhooks_cli(server.url, "oscar-secret-key")
            every = _webhooks_cli(server.url, "oscar-secret-key", "destinations")
        log = (tmp_path / "serve.log").read_text()
    assert listed.returncode == 0 and every.returncode == 0, listed.stderr + every.stderr
    # Open, or (on a slow machine, 5 s later) half-open with its probe out.
    shown = re.compile(
        re.escape(f"{receiver.url}: circuit ")
        + r"(open after \d+ failed attempts in a row \(last: the receiver answered 500\);"
        r" next try at \S+|half-open: one delivery is sent to see whether it answers)"
    )
    for result in (listed, every):
        said = " ".join(result.stdout.split())  # unwrapped
        assert shown.match(said), said
    assert "#1 pause.created" in " ".join(listed.stdout.split())
    assert f"webhook destination {receiver.url}: circuit open after 5 failed" in log
