"""A SQLite store whose disk fills recovers by itself once space is freed.

Each test runs on a real 8 MiB filesystem (a tmpfs mounted for it), filled with
a ballast file: the store meets SQLite's own "database or disk is full", as in
production. Mounting needs root (or CAP_SYS_ADMIN); where the mount is refused
the tests skip and say so.

Only a checkpoint empties the WAL, so a store that cannot checkpoint after the
disk filled stays full: writes resumed for a few cycles once space was freed,
filled it again, and never recovered without an offline checkpoint. Meanwhile
the health check said 200 and a resume that had claimed waited most of its
lease before failing, its pause left ``claimed``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from http_support import serve
from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.types import PauseState, TurnResult
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

DISK = "8m"
# Freed afterwards: far less than the commits until the next periodic checkpoint
# would write (a cycle writes about 200 KB of WAL), but room for what the
# cycles after need: the database grows about 250 KB over them, and the WAL is
# checkpointed once it is half the free space left, about 350 KB at most here.
FREED = 1024 * 1024
CYCLES_AFTER = 60


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a {DISK} tmpfs here ({mounted.stderr.strip() or 'mount refused'}): "
            "the disk-full tests need root or CAP_SYS_ADMIN"
        )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(ballast: Path, leave: int) -> None:
    """Grow the ballast until at most ``leave`` bytes of its disk are free."""
    with open(ballast, "ab") as out:
        while (free := _free(ballast.parent)) > leave:
            try:
                out.write(b"\0" * min(free - leave, 256 * 1024))
                out.flush()
            except OSError:
                return


def _free(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def _empty_the_wal(db: Path) -> None:
    connection = sqlite3.connect(db)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def _integrity(db: Path) -> str:
    connection = sqlite3.connect(db)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


def send_payment(amount: int, to: str) -> str:
    """Send money."""
    return f"sent {amount} to {to}"


def payments(db: Path, *tools: Callable[..., str], **options: Any) -> SymfonicAgent:
    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    return SymfonicAgent(
        model=model,
        tools=list(tools) or [send_payment],
        approval={"send_payment"},
        store=f"sqlite:///{db}",
        **options,
    )


async def cycle(agent: SymfonicAgent) -> str:
    """One turn that pauses and its resume: ``complete``, or what stopped it."""
    try:
        paused = await agent.run("pay bob 5")
        if paused.pause is None:
            return _outcome(paused)
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
    except StoreUnavailable as error:
        return f"refused: {error}"
    return _outcome(done)


def _outcome(result: TurnResult) -> str:
    if result.error is None:
        return result.status
    return f"{result.status}: {result.error.code}: {result.error.message}"


async def test_writes_resume_after_space_is_freed_without_a_restart(small_disk: Path) -> None:
    db, ballast = small_disk / "symfonic.db", small_disk / "ballast"
    agent = payments(db)
    async with agent, serve(agent) as client:
        assert await cycle(agent) == "complete"
        # Full with an empty WAL: no checkpoint can give space back.
        _empty_the_wal(db)
        _fill(ballast, 0)
        outcome = await cycle(agent)
        assert "disk holding the database is full" in outcome, outcome

        # While the store cannot write, the health check says so, and why.
        health = await client.get("/v1/health")
        assert health.status_code == 503, health.text
        error = health.json()["error"]
        assert error["code"] == "store_unavailable"
        assert "the disk holding the database is full" in error["message"]

        # Freed: writes resume, and stay resumed, with no restart.
        os.truncate(ballast, max(0, ballast.stat().st_size - FREED))
        health = await client.get("/v1/health")
        assert health.status_code == 200, health.text
        for done in range(CYCLES_AFTER):
            outcome = await cycle(agent)
            assert outcome == "complete", f"after {done} of {CYCLES_AFTER} cycles: {outcome}"
            # The WAL never takes the room its own checkpoint needs: the database
            # file can always grow to take its pages, however the cycles fall.
            assert _wal_size(db) <= _free(small_disk), f"after {done + 1} cycles"
    assert _integrity(db) == "ok"


async def test_an_empty_wal_on_a_full_disk_is_not_called_recovered(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Emptying the WAL gives nothing back when the disk is full of something
    else: the log says the disk is still full, and says writes can resume only
    once space is freed and a checkpoint finds room."""
    caplog.set_level(logging.WARNING, logger="symfonic.storage.sqlite")
    db, ballast = small_disk / "symfonic.db", small_disk / "ballast"
    agent = payments(db)
    async with agent:
        assert await cycle(agent) == "complete"
        _empty_the_wal(db)
        _fill(ballast, 0)
        assert "disk holding the database is full" in await cycle(agent)
        # The retries' first waits are 0.25 s, then 0.5 s.
        await _log_says(caplog, "is empty, but its disk is still full", within=10)
        assert not _said(caplog, "writes can resume"), _said(caplog, "")

        os.truncate(ballast, max(0, ballast.stat().st_size - FREED))
        # The backoff's longest wait is 10 s, and no write comes meanwhile.
        await _log_says(caplog, "is checkpointed again; writes can resume", within=30)
        assert await cycle(agent) == "complete"
    assert _integrity(db) == "ok"


def _said(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if words in r.getMessage()]


async def _log_says(caplog: pytest.LogCaptureFixture, words: str, *, within: float) -> None:
    with anyio.fail_after(within):
        while True:
            if _said(caplog, words):
                return
            await anyio.sleep(0.05)


def _wal_size(db: Path) -> int:
    wal = db.with_name(f"{db.name}-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_a_claimed_resume_fails_fast_and_its_claim_is_released_once_writes_work(
    small_disk: Path,
) -> None:
    """The claim committed, then the disk filled while the tool ran: the publish
    cannot be written. The resume ends at once with ``store_unavailable`` instead
    of waiting out most of its lease, and the first sweep after space is freed
    moves the pause to ``abandoned`` instead of leaving it ``claimed``."""
    db, ballast = small_disk / "symfonic.db", small_disk / "ballast"

    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        _empty_the_wal(db)  # so that no checkpoint can give the space back
        _fill(ballast, 0)
        return f"sent {amount} to {to}"

    agent = payments(db, send_payment, claim_lease=30)
    async with agent:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        started = anyio.current_time()
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
        waited = anyio.current_time() - started
        assert done.status == "failed" and done.error is not None
        assert done.error.code == "store_unavailable", done.error
        assert "full" in done.error.message
        assert waited < 5, f"the resume waited {waited:.0f} s for a disk that stayed full"
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.CLAIMED

        ballast.unlink()
        await agent.sweep()
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.ABANDONED
    assert _integrity(db) == "ok"


async def test_a_failed_checkpoint_is_retried_with_no_write_until_it_succeeds(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The WAL holds pages the database file must grow to take when the disk
    fills: the checkpoint fails, says so at WARNING with the reason, and is retried
    on its own, with no write coming, until space is freed and it empties the WAL."""
    caplog.set_level(logging.WARNING, logger="symfonic.storage.sqlite")
    db, ballast = small_disk / "symfonic.db", small_disk / "ballast"
    wal = small_disk / "symfonic.db-wal"
    agent = payments(db)
    async with agent:
        for _ in range(10):  # pages in the WAL, far fewer commits than a checkpoint waits for
            assert await cycle(agent) == "complete"
        assert wal.stat().st_size > 0
        _fill(ballast, 0)
        outcome = await cycle(agent)
        assert "disk holding the database is full" in outcome, outcome
        failed = [r.getMessage() for r in caplog.records if "checkpoint of" in r.getMessage()]
        assert failed and all(r.levelno == logging.WARNING for r in caplog.records)
        assert "failed: the disk holding the database is full" in failed[0], failed

        os.truncate(ballast, max(0, ballast.stat().st_size - FREED))
        with anyio.fail_after(30):  # the backoff's longest wait is 10 s
            while True:
                if wal.stat().st_size == 0:  # emptied, and no write came to do it
                    break
                await anyio.sleep(0.1)
        said = [r.getMessage() for r in caplog.records]
        assert any("is checkpointed again; writes can resume" in line for line in said), said
        assert await cycle(agent) == "complete"
    assert _integrity(db) == "ok"
