"""A pause's transitions reach the disk before they are acknowledged, on SQLite too.

Under WAL, ``synchronous=NORMAL`` syncs only at checkpoints: a power cut or an
OS crash can undo the last commits, a claim whose tool has already run among
them, and the pause is ``pending`` again after the reboot. So every connection
the store writes through runs with ``synchronous=FULL`` unless the URL opts out
with ``?synchronous=normal``. Each transition is checked on the connection it
committed on, as it committed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.storage import open_store
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

FULL, NORMAL = 2, 1
WRITES = {"INSERT", "UPDATE", "DELETE", "WITH"}


def send_payment(amount: int, to: str) -> str:
    """Send money."""
    return f"sent {amount} to {to}"


class Watched(sqlite3.Connection):
    """A connection that notes the ``synchronous`` in effect at every ``COMMIT`` and
    every write that is a transaction by itself."""

    levels: list[int]

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        words = sql.split(None, 1)[0].upper()
        if words == "COMMIT" or (words in WRITES and not self.in_transaction):
            (level,) = super().execute("PRAGMA synchronous").fetchone()
            self.levels.append(int(level))
        return super().execute(sql, *args)


async def _levels_of_a_cycle(url: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    levels: list[int] = []
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = real_connect(*args, factory=Watched, **kwargs)
        connection.levels = levels
        return connection

    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    agent = SymfonicAgent(model=model, tools=[send_payment], approval={"send_payment"}, store=url)
    async with agent:
        monkeypatch.setattr(sqlite3, "connect", connect)
        # Connections opened before the patch are opened again under it.
        await agent.store.__aexit__(None, None, None)
        await agent.store.__aenter__()
        paused = await agent.run("pay bob 5")  # records the pause
        assert paused.pause is not None
        done = await agent.resume(paused.pause.token, {"decision": "approve"})  # claim, publish
        assert done.status == "complete"
        again = await agent.run("pay bob 5")
        assert again.pause is not None
        assert await agent.store.abandon_pending(again.session_id) == 1  # one statement
    return levels


async def test_pause_transitions_commit_under_synchronous_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    levels = await _levels_of_a_cycle(f"sqlite:///{tmp_path / 'full.db'}", monkeypatch)
    assert levels, "no transaction committed through the store's connections"
    assert set(levels) == {FULL}, levels


async def test_the_url_can_opt_out_to_normal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'normal.db'}?synchronous=normal"
    levels = await _levels_of_a_cycle(url, monkeypatch)
    assert levels and set(levels) == {NORMAL}, levels


async def test_an_unknown_synchronous_is_refused_in_words(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="synchronous=full or synchronous=normal"):
        async with open_store(f"sqlite:///{tmp_path / 'x.db'}?synchronous=off"):
            pass
