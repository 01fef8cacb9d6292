"""``symfonic serve`` start-up: the store agents are served on, and one that will not open.

The store a served agent's module declares is where its data goes unless the
operator names another; a store that cannot be opened is one plain line and exit
code 2, before anything says the service is up.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

import httpx
import pytest

from http_support import free_port
from serve_support import serving
from symfonic import SymfonicAgent
from symfonic.cli.main import main
from symfonic.cli.serve import serving_store
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.testing import ScriptedChatModel, reply

AGENT_MODULE = """\
from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, reply

def _agent(name: str, store: str | None) -> SymfonicAgent:
    return SymfonicAgent(name=name, model=ScriptedChatModel.from_script([reply("hi")]),
                         store=store)

billing = _agent("billing", {billing!r})
support = _agent("support", {support!r})
helper = _agent("helper", None)
"""


def _agent(name: str, store: str | None) -> SymfonicAgent:
    return SymfonicAgent(name=name, model=ScriptedChatModel.from_script([reply("hi")]),
                         store=store)


def _write_module(where: Path, name: str, billing: str, support: str | None) -> None:
    where.mkdir(exist_ok=True)
    (where / f"{name}.py").write_text(AGENT_MODULE.format(billing=billing, support=support))


def _sessions(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT session_id, agent FROM symfonic_sessions").fetchall()


@pytest.mark.slow
def test_serve_keeps_the_store_the_agents_module_declares(tmp_path: Path) -> None:
    db = tmp_path / "billing.db"
    _write_module(tmp_path / "app", "declared_app", f"sqlite:///{db}", None)
    env = {key: value for key, value in os.environ.items() if key != "SYMFONIC_STORE"}
    env["PYTHONPATH"] = str(tmp_path / "app")
    log = tmp_path / "server.log"
    agents = ("declared_app:billing", "declared_app:helper")
    with serving(None, log, *agents, keys="", env=env, cwd=tmp_path) as server:
        billing = httpx.post(f"{server.url}/v1/sessions", json={}).json()["session_id"]
        helper = httpx.post(
            f"{server.url}/v1/sessions", json={"agent": "helper"}
        ).json()["session_id"]
    assert f"| store sqlite:///{db} |" in log.read_text().splitlines()[0]
    # Both agents' sessions are in the declared store; nothing went to the default file.
    assert sorted(_sessions(db)) == sorted([(billing, "billing"), (helper, "helper")])
    assert not (tmp_path / "symfonic.db").exists()


def test_the_store_option_then_the_environment_win_over_the_declared_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SYMFONIC_STORE", raising=False)
    agents = [_agent("a", None), _agent("b", "sqlite:///b.db"), _agent("c", "sqlite:///b.db")]
    assert serving_store(None, agents) == "sqlite:///b.db"
    assert serving_store(None, [_agent("a", None)]) == "sqlite:///symfonic.db"
    monkeypatch.setenv("SYMFONIC_STORE", "sqlite:///env.db")
    assert serving_store(None, agents) == "sqlite:///env.db"
    assert serving_store("sqlite:///option.db", agents) == "sqlite:///option.db"


def test_agents_that_declare_different_stores_are_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SYMFONIC_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    _write_module(tmp_path / "app", "split_app", f"sqlite:///{tmp_path / 'a.db'}",
                  "postgresql://app:hunter2@db/app")
    monkeypatch.syspath_prepend(str(tmp_path / "app"))
    with socket.socket() as taken:  # were the agents served, the bind would fail, not hang
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["serve", "split_app:billing", "split_app:support", "--port", port]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("symfonic serve: the agents declare different stores (billing: ")
    assert "support: postgresql://app:***@db/app" in line and "--store" in line
    assert "hunter2" not in line
    assert not list(tmp_path.glob("*.db"))
    # Naming the store settles it.
    monkeypatch.setenv("SYMFONIC_STORE", "sqlite:///chosen.db")
    agents = [_agent("billing", "sqlite:///a.db"), _agent("support", "sqlite:///b.db")]
    assert serving_store(None, agents) == "sqlite:///chosen.db"
    monkeypatch.delenv("SYMFONIC_STORE")
    with pytest.raises(ConfigurationError):
        serving_store(None, agents)


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("postgresql://app:hunter2@127.0.0.1:{port}/app",
         "cannot open the store postgresql://app:***@127.0.0.1:{port}/app: Connect call failed"),
        ("bogus://somewhere", "unknown store URL 'bogus://somewhere'"),
        ("sqlite:///{tmp}/missing/dir/s.db",
         "cannot open the store sqlite:///{tmp}/missing/dir/s.db: unable to open database file"),
        ("postgresql://app@db:port/app", "is not a valid store URL"),
    ],
    ids=["unreachable", "unknown-scheme", "sqlite-missing-dir", "malformed"],
)
def test_a_store_that_will_not_open_is_one_line_and_exit_2_before_the_banner(
    store: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SYMFONIC_API_KEYS", "")
    closed = free_port()  # nothing listens there
    store, says = (text.format(port=closed, tmp=tmp_path) for text in (store, says))
    assert main(["serve", "--store", store, "--port", str(free_port())]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no banner: the service never said it was up
    [line] = captured.err.splitlines()
    assert line.startswith("symfonic serve: ") and says in line
    assert "hunter2" not in line and "Traceback" not in line
