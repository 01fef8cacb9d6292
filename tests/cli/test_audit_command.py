"""``symfonic audit verify|export`` and ``prune --prune-audit``, as an operator runs them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
import rfc8785

from bulk_pauses import bulk_pauses
from symfonic.cli.main import main
from symfonic.core.contracts.audit import AuditEntry
from symfonic.core.contracts.readdressing import Reassignment
from symfonic.storage import open_store


def audited(url: str, count: int) -> None:
    async def append() -> None:
        async with open_store(url) as store:
            for n in range(count):
                await store.append_audit(AuditEntry("reassigned", f"s{n}", "assistant"))
            await store.seal_audit()

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
        connection.execute("UPDATE symfonic_audit SET reason = 'nothing' WHERE sequence = -2")
    assert main(["audit", "verify", "--store", url]) == 1
    out = capsys.readouterr().out
    assert "broken: record 2 (reassigned" in out and "changed after it was written" in out


def test_verify_says_how_many_records_wait_to_be_sealed(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def append_unsealed() -> None:
        async with open_store(url) as store:
            await store.append_audit(AuditEntry("reassigned", "s9", "assistant"))

    anyio.run(append_unsealed)
    assert main(["audit", "verify", "--store", url]) == 0
    out = capsys.readouterr().out
    assert "holds: 3 records verified" in out
    assert "not yet sealed into the chain: 1, the oldest committed" in out


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
            "UPDATE symfonic_audit SET at = '2000-01-01T00:00:00.000Z' WHERE sequence IN (-1, -2)"
        )
    assert main(["prune", "--older-than", "1m", "--store", url]) == 0
    capsys.readouterr()
    assert main(["audit", "export", "--store", url]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["prune", "--older-than", "1m", "--store", url, "--prune-audit"]) == 0
    assert "deleted 2 audit records" in capsys.readouterr().out
    assert main(["audit", "verify", "--store", url]) == 0
    assert "holds: 1 records verified" in capsys.readouterr().out


def test_export_shows_a_reassignment_and_each_line_without_its_hash_is_what_was_hashed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'reassigned.db'}"

    async def reassign() -> str:
        async with open_store(url) as store:
            now = datetime.now(UTC)
            (pause,) = await bulk_pauses(store, ["pay bob?"], start=now, audience="approver")
            asked = Reassignment(pause.pause_id, "finance", "olga", "carol is away", now)
            assert await store.reassign_pause(asked)
            await store.seal_audit()
            return pause.pause_id

    pause_id = anyio.run(reassign)
    assert main(["audit", "export", "--store", url]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["event"], line["pause_id"]) for line in lines] == [
        ("asked", pause_id),
        ("reassigned", pause_id),
    ]
    moved = lines[1]
    assert (moved["principal"], moved["from_audience"], moved["to_audience"]) == (
        "olga",
        "approver",
        "finance",
    )
    assert moved["reason"] == "carol is away"
    # Unset, the new fields are neither hashed nor exported: older records verify as before.
    assert "from_audience" not in lines[0] and "to_audience" not in lines[0]
    for line in lines:
        hashed = {name: value for name, value in line.items() if name != "hash"}
        assert hashlib.sha256(rfc8785.dumps(hashed)).hexdigest() == line["hash"]
    assert main(["audit", "verify", "--store", url]) == 0
