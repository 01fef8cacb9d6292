"""``symfonic audit verify|export`` and ``prune --prune-audit``, as an operator runs them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from symfonic.cli.main import main
from symfonic.core.contracts.audit import AuditEntry
from symfonic.storage import open_store


def audited(url: str, count: int) -> None:
    async def append() -> None:
        async with open_store(url) as store:
            for n in range(count):
                await store.append_audit(AuditEntry("reassigned", f"s{n}", "assistant"))

    anyio.run(append)


@pytest.fixture
def url(tmp_path: Path) -> str:
    store = f"sqlite:///{tmp_path / 'audit.db'}"
    audited(store, 3)
    return store


def test_verify_says_the_chain_holds_then_names_the_edited_record(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "verify", "--store", url]) == 0
    assert "holds: 3 records verified" in capsys.readouterr().out
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        connection.execute("UPDATE symfonic_audit SET reason = 'nothing' WHERE sequence = 2")
    assert main(["audit", "verify", "--store", url]) == 1
    out = capsys.readouterr().out
    assert "broken: record 2 (reassigned" in out and "changed after it was written" in out


def test_export_writes_json_lines_since_a_time(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "export", "--store", url, "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["sequence"] for line in lines] == [1, 2, 3]
    assert lines[1]["prev_hash"] == lines[0]["hash"]
    assert main(["audit", "export", "--store", url, "--since", "2999-01-01T00:00:00Z"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["audit", "export", "--store", url, "--since", "yesterday"]) == 2


def test_prune_keeps_the_audit_unless_asked(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        # The first two records from long ago (their hashes no longer match, but a
        # prune deletes them and keeps the second's stored hash as the anchor).
        connection.execute(
            "UPDATE symfonic_audit SET at = '2000-01-01T00:00:00.000Z' WHERE sequence <= 2"
        )
    assert main(["prune", "--older-than", "1m", "--store", url]) == 0
    capsys.readouterr()
    assert main(["audit", "export", "--store", url]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["prune", "--older-than", "1m", "--store", url, "--prune-audit"]) == 0
    assert "deleted 2 audit records" in capsys.readouterr().out
    assert main(["audit", "verify", "--store", url]) == 0
    assert "holds: 1 records verified" in capsys.readouterr().out
