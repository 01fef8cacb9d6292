"""``symfonic chat`` keeps its turn when the connection to the service drops.

A real ``symfonic serve`` (SQLite, and PostgreSQL) behind a proxy that cuts
every connection mid-turn, as a load balancer dropping long streams does: the
chat says the connection was lost, reconnects to its run's events after the
last one it printed, and prints the rest of the turn, each event once, while
the turn itself ran on undisturbed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cutting_proxy import cutting_proxy
from serve_support import serving
from terminal_support import KEY, Screen, client_env

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent.parent
CALLED = 'gated_step {"note": "tidy the ledger"}'


def test_chat_reconnects_after_a_cut_connection_and_prints_each_event_once(
    store_url: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    env = {**os.environ, "PYTHONPATH": str(TESTS), "SYMFONIC_TEST_GATE": str(gate)}
    with (
        serving(store_url, tmp_path / "server.log", "gated_agent:agent", keys=f"alice={KEY}",
                env=env) as server,
        cutting_proxy(server.url) as proxy,
    ):
        chat = Screen("chat", "--url", proxy.url, env=client_env())
        chat.wait_for("you: ")
        chat.type("tidy the ledger")
        chat.wait_for(CALLED)  # the step is running, and waits for the gate
        proxy.cut()
        chat.wait_for("connection lost, reconnecting…")
        gate.touch()
        chat.wait_for("stepped on tidy the ledger")
        chat.wait_for("assistant: finished after stepped on tidy the ledger")
        chat.wait_for("you: ")
        assert chat.end() == 0
    shown = chat.text
    assert shown.count("Starting the step now.") == 1, shown
    assert shown.count(CALLED) == 1, shown
    assert shown.count("← gated_step [ok]") == 1, shown
    assert shown.count("finished after") == 1, shown
    assert "Traceback" not in shown
