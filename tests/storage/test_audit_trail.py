"""The audit trail on both stores: one chained record per change, in the change's transaction.

The store's pause transitions are driven directly, as in ``test_store_pauses``;
the records are read back through the ``AuditLog`` role and the chain is
checked by :func:`verify_log`, which an auditor's ``symfonic audit verify``
runs too. Tampering is done with plain SQL, as someone with the database's
credentials would.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import asyncpg
import pytest

from bulk_pauses import bulk_pauses
from symfonic.core.contracts.audit import AuditEntry, AuditRecord, verify_log
from symfonic.core.contracts.errors import RevisionConflict
from symfonic.core.contracts.store import ResumePublish, Store
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage import audit_log, open_store, pause_sweep
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Dialect
from test_store_pauses import HOUR, T0, TURN, claim_of, claimed, new_session, paused

pytestmark = pytest.mark.anyio


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[SqlStore]:
    """A second worker's store on the same database (its own pool)."""
    async with open_store(store_url) as opened:
        assert isinstance(opened, SqlStore)
        yield opened


async def records(store: Any) -> list[AuditRecord]:
    """The trail once every committed record is sealed, as a worker's sealer does."""
    await store.seal_audit()
    return list(await store.audit_records(after=0, limit=1000))


async def tamper(store_url: str, statement: str) -> None:
    """Change the database behind the store's back, with plain SQL."""
    if store_url.startswith("sqlite:///"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as connection:
            connection.execute(statement)
        return
    connection = await asyncpg.connect(store_url)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def test_each_change_of_a_pause_is_one_chained_record(store: Any) -> None:
    session_id = await new_session(store)
    pause, claim = await claimed(store, session_id, args_digest="a" * 64)
    await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "done"))
    expiring = await paused(store, session_id, expires_at=T0 + timedelta(minutes=5))
    await store.sweep(T0 + HOUR)
    trail = await records(store)
    assert [(r.event, r.pause_id) for r in trail] == [
        ("asked", pause.pause_id),
        ("answered", pause.pause_id),
        ("published", pause.pause_id),
        ("asked", expiring.pause_id),
        ("expired", expiring.pause_id),
    ]
    asked, answered = trail[0], trail[1]
    assert (asked.principal, asked.args_digest, asked.session_id) == ("ann", "a" * 64, session_id)
    assert (answered.principal, answered.decision) == ("ann", "answered")
    assert trail[4].principal is None and trail[4].reason == "nobody answered before it expired"
    assert [r.sequence for r in trail] == [1, 2, 3, 4, 5]
    assert [r.prev_hash for r in trail[1:]] == [r.hash for r in trail[:-1]]
    assert await verify_log(store) == (5, None)


async def test_an_approval_records_its_decision_reason_and_both_digests(store: Any) -> None:
    session_id = await new_session(store)
    pause = await paused(store, session_id, kind=InteractionKind.APPROVAL, args_digest="a" * 64)
    answer = {"decision": "reject", "reason": 'too "much"\nmoney, 100 €'}
    claim = claim_of(pause, answer)
    assert await store.claim_pause(claim)
    edited = await paused(store, session_id, kind=InteractionKind.APPROVAL, args_digest="b" * 64)
    edit = replace(
        claim_of(edited, {"decision": "edit", "args": {"amount": 1}}), edited_args_digest="c" * 64
    )
    assert await store.claim_pause(edit)
    answered = [r for r in await records(store) if r.event == "answered"]
    assert [(r.decision, r.reason) for r in answered] == [
        ("reject", answer["reason"]),
        ("edit", None),
    ]
    assert (answered[1].args_digest, answered[1].edited_args_digest) == ("b" * 64, "c" * 64)
    # Text that JSON escapes hashes the same in the database as in Python.
    assert (await verify_log(store))[1] is None


async def test_a_declined_answer_is_recorded_as_declined_and_a_cancelled_one_as_cancelled(
    store: Any,
) -> None:
    session_id = await new_session(store)
    schema = {"type": "object", "properties": {"iban": {"type": "string"}}}
    asked = {"kind": InteractionKind.FORM, "response_schema": schema, "server": "bank"}
    refused = await paused(store, session_id, **asked)
    dropped = await paused(store, session_id, **asked)
    filled = await paused(store, session_id, **asked)
    # An MCP elicitation's explicit "no", its "not now", and a form filled in.
    assert await store.claim_pause(replace(claim_of(refused, None), status="declined"))
    assert await store.claim_pause(replace(claim_of(dropped, None), status="cancelled"))
    assert await store.claim_pause(claim_of(filled, {"iban": "DE02"}))
    answered = {r.pause_id: r for r in await records(store) if r.event == "answered"}
    decisions = [
        (answered[p.pause_id].decision, answered[p.pause_id].principal)
        for p in (refused, dropped, filled)
    ]
    assert decisions == [("declined", "ann"), ("cancelled", "ann"), ("answered", "ann")]
    assert await verify_log(store) == (6, None)


async def test_abandonment_and_supersede_are_recorded(store: Any) -> None:
    session_id = await new_session(store)
    _, claim = await claimed(store, session_id)
    assert await store.abandon_claim(session_id, claim.claim_id)
    waiting = await paused(store, session_id)
    assert await store.abandon_pending(session_id) == 1
    trail = await records(store)
    assert [r.event for r in trail] == ["asked", "answered", "abandoned", "asked", "abandoned"]
    assert trail[2].reason == "the turn that answered it failed or its claim lapsed"
    assert (trail[4].pause_id, trail[4].reason) == (
        waiting.pause_id,
        "a new turn in its session abandoned it",
    )
    assert (await verify_log(store))[1] is None


async def test_a_failed_write_leaves_no_record(store: Any) -> None:
    session_id = await new_session(store)
    _, first = await claimed(store, session_id)
    second, late = await claimed(store, session_id)
    await store.publish_resume(ResumePublish(session_id, first.claim_id, TURN, "done"))
    before = await records(store)
    # The second answer's turn started at revision 0, which the first moved on: its
    # publish marks the pause published, then fails to append, and rolls back whole.
    with pytest.raises(RevisionConflict):
        await store.publish_resume(ResumePublish(session_id, late.claim_id, TURN, "late"))
    assert await records(store) == before
    assert (await store.get_pause(second.pause_id)).state is PauseState.CLAIMED
    assert (await verify_log(store))[1] is None


async def test_code_appends_through_the_same_chain(store: Any) -> None:
    session_id = await new_session(store)
    await paused(store, session_id)
    entry = AuditEntry(
        "reassigned", session_id, "assistant", principal="olga", reason="away on leave"
    )
    await store.append_audit(entry)
    first, record = await records(store)
    assert (record.sequence, record.event, record.principal) == (2, "reassigned", "olga")
    assert record.prev_hash == first.hash
    assert (await verify_log(store))[1] is None


async def test_a_record_of_any_text_verifies(store: Any) -> None:
    # Each store hashes a record its own way (SQLite in Python, PostgreSQL in SQL);
    # the verifier's RFC 8785 must read the same bytes for text JSON escapes or keeps.
    session_id = await new_session(store)
    reason = 'a "quote", a \\ and \x01\x1f\x7f, é € \u2028 \U0001f600 and \t\n'
    entry = AuditEntry("reassigned", session_id, "assistant", principal="zoë", reason=reason)
    await store.append_audit(entry)
    (record,) = await records(store)
    assert (record.reason, record.principal) == (reason, "zoë")
    assert await verify_log(store) == (1, None)


# A second worker process: 16 clients each append 10 records, and seal as they go.
OTHER_PROCESS = """
import sys, anyio
from symfonic.core.contracts.audit import AuditEntry
from symfonic.storage import open_store

async def main(url):
    async with open_store(url) as store:
        async def client(n):
            for k in range(10):
                await store.append_audit(AuditEntry("reassigned", f"p{n}", "assistant"))
                if k % 3 == 0:
                    await store.seal_audit()
        async with anyio.create_task_group() as group:
            for n in range(16):
                group.start_soon(client, n)

anyio.run(main, sys.argv[1])
"""


async def test_concurrent_writers_and_sealers_never_share_a_place(
    store: Any, other: SqlStore, store_url: str
) -> None:
    sessions = [await new_session(store) for _ in range(16)]
    writing = True

    async def ask(worker: Any, session_id: str) -> None:
        for _ in range(10):
            await paused(worker, session_id, pause_id=uuid.uuid4().hex)

    async def seal(worker: Any) -> None:
        while writing:
            await worker.seal_audit()
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as sealers:
        for worker in (store, other):
            sealers.start_soon(seal, worker)
        async with anyio.create_task_group() as clients:
            clients.start_soon(anyio.run_process, [sys.executable, "-c", OTHER_PROCESS, store_url])
            for i, session_id in enumerate(sessions):
                clients.start_soon(ask, (store, other)[i % 2], session_id)
        writing = False
    trail = await records(other)
    assert [r.sequence for r in trail] == list(range(1, 321))
    assert len({r.prev_hash for r in trail}) == 320
    assert sum(r.event == "asked" for r in trail) == 160
    assert await verify_log(other) == (320, None)
    await _tamper_and_verify(store_url, other, trail)


async def _tamper_and_verify(store_url: str, store: Any, trail: list[AuditRecord]) -> None:
    """A record inserted past the head, one deleted and one changed: each found, first first."""
    forged = replace(trail[-1], sequence=321, prev_hash=trail[-1].hash, principal="mallory")
    forged = replace(forged, hash=forged.computed_hash())  # whoever forges can hash too
    values = ", ".join("NULL" if v is None else repr(v) for v in asdict(forged).values())
    columns = ", ".join(asdict(forged))
    await tamper(store_url, f"INSERT INTO symfonic_audit ({columns}) VALUES ({values})")
    broken = (await verify_log(store))[1]
    assert broken is not None and broken.message == (
        "record 321 was inserted after the fact: the chain ends at record 320"
    )
    asked = [r.sequence for r in trail if r.pause_id]  # the other process's have no pause
    deleted, changed = asked[len(asked) * 2 // 3], asked[len(asked) // 3]
    for n, change in (
        (deleted, "DELETE FROM symfonic_audit"),
        (changed, "UPDATE symfonic_audit SET principal = 'mallory'"),
    ):
        where = f"pause_id = '{trail[n - 1].pause_id}' AND event = '{trail[n - 1].event}'"
        await tamper(store_url, f"{change} WHERE {where}")
        checked, broken = await verify_log(store)
        assert checked == n - 1 and broken is not None and broken.sequence == n
    assert broken is not None and "changed after" in broken.message


async def test_a_sweep_expiring_500_pauses_in_one_statement_chains_500_records(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pause_sweep, "SWEEP_BATCH", 500)
    made = await bulk_pauses(store, [f"pay {n}?" for n in range(500)], start=T0)
    assert (await store.sweep(T0 + timedelta(days=2))).expired == 500
    trail = await records(store)
    expired = trail[500:]
    assert [r.sequence for r in expired] == list(range(501, 1001))
    assert {r.event for r in expired} == {"expired"}
    assert {r.pause_id for r in expired} == {p.pause_id for p in made}
    if store.dialect is Dialect.POSTGRESQL:  # a statement's records, in the order asked
        assert [r.pause_id for r in expired] == [p.pause_id for p in made]
    assert [r.prev_hash for r in expired] == [r.hash for r in trail[499:999]]
    assert await verify_log(store) == (1000, None)


async def test_verify_names_an_edited_record(store: Any, store_url: str) -> None:
    session_id = await new_session(store)
    for _ in range(3):
        await claimed(store, session_id)
    await store.seal_audit()
    await tamper(store_url, "UPDATE symfonic_audit SET principal = 'mallory' WHERE sequence = -4")
    checked, broken = await verify_log(store)
    assert checked == 3 and broken is not None and broken.sequence == 4
    assert "record 4 (answered" in broken.message and "changed" in broken.message


async def test_verify_names_a_deleted_record_and_a_removed_tail(store: Any, store_url: str) -> None:
    session_id = await new_session(store)
    for _ in range(3):
        await claimed(store, session_id)
    trail = await records(store)
    await tamper(store_url, "DELETE FROM symfonic_audit WHERE sequence = -3")
    broken = (await verify_log(store))[1]
    assert broken is not None and broken.message == "record 3 was removed"
    await tamper(store_url, "DELETE FROM symfonic_audit WHERE sequence >= -2")
    broken = (await verify_log(store))[1]
    assert broken is not None and broken.message == "records 1 to 3 were removed"
    await tamper(store_url, "DELETE FROM symfonic_audit WHERE sequence <= -5")
    await tamper(
        store_url,
        f"UPDATE symfonic_audit_head SET anchor_sequence = 3, anchor_hash = '{trail[2].hash}'",
    )
    broken = (await verify_log(store))[1]
    assert broken is not None and broken.message == "records 5 to 6 were removed"


async def test_pruning_keeps_an_anchor_the_rest_verifies_from(store: Any) -> None:
    session_id = await new_session(store)
    for _ in range(3):
        await claimed(store, session_id)
        await anyio.sleep(0.01)  # each pair of records a millisecond apart at least
    trail = await records(store)
    assert await store.prune_audit(trail[2].at) == 2
    anchor = await store.audit_anchor()
    assert (anchor.anchor_sequence, anchor.anchor_hash) == (2, trail[1].hash)
    assert [r.sequence for r in await records(store)] == [3, 4, 5, 6]
    assert await verify_log(store) == (4, None)
    assert await store.prune_audit("9999-12-31T00:00:00.000Z") == 4
    await claimed(store, session_id)
    assert await store.prune_audit("9999-12-31T00:00:00.000Z") == 0  # unsealed: kept
    assert len(await records(store)) == 2
    assert await verify_log(store) == (2, None)


async def test_a_record_waits_unsealed_until_a_seal_gives_it_its_place(store: Any) -> None:
    session_id = await new_session(store)
    await paused(store, session_id)
    anchor = await store.audit_anchor()
    assert (anchor.unsealed, anchor.head_sequence) == (1, 0)
    assert anchor.unsealed_since is not None
    assert anchor.unsealed_seconds(datetime.now(UTC)) >= 0
    assert await store.audit_records(after=0, limit=10) == []
    assert await verify_log(store) == (0, None)
    assert await store.seal_audit() == 1
    anchor = await store.audit_anchor()
    assert (anchor.unsealed, anchor.unsealed_since, anchor.head_sequence) == (0, None, 1)
    assert anchor.unsealed_seconds(datetime.now(UTC)) == 0
    assert await verify_log(store) == (1, None)


async def test_verify_names_a_record_inserted_after_the_fact(store: Any, store_url: str) -> None:
    session_id = await new_session(store)
    await claimed(store, session_id)
    last = (await records(store))[-1]
    forged = replace(last, sequence=3, prev_hash=last.hash, principal="mallory", hash="")
    forged = replace(forged, hash=forged.computed_hash())  # whoever forges can hash too
    values = ", ".join(
        "NULL" if v is None else str(v) if isinstance(v, int) else f"'{v}'"
        for v in asdict(forged).values()
    )
    await tamper(
        store_url, f"INSERT INTO symfonic_audit ({', '.join(asdict(forged))}) VALUES ({values})"
    )
    broken = (await verify_log(store))[1]
    assert broken is not None and broken.message == (
        "record 3 was inserted after the fact: the chain ends at record 2"
    )


async def test_verify_names_a_record_put_where_no_seal_places_it(
    store: Any, store_url: str
) -> None:
    session_id = await new_session(store)
    await claimed(store, session_id)
    await store.seal_audit()
    await anyio.sleep(0.01)
    await claimed(store, session_id)
    trail = await records(store)
    assert await store.prune_audit(trail[2].at) == 2
    assert await verify_log(store) == (2, None)
    # A record under a pruned record's number (-1): past the seals, before the unsealed.
    forged = replace(trail[0], sequence=-1, principal="mallory", prev_hash="", hash="")
    values = ", ".join("NULL" if v is None else repr(v) for v in asdict(forged).values())
    columns = ", ".join(asdict(forged))
    await tamper(store_url, f"INSERT INTO symfonic_audit ({columns}) VALUES ({values})")
    broken = (await verify_log(store))[1]
    assert broken is not None and broken.message == (
        "a record was inserted after the fact: the stored record -1 is in no seal"
    )


# A worker that commits its records and dies before any seal.
KILLED_BEFORE_SEALING = """
import os, signal, sys, anyio
from symfonic.core.contracts.audit import AuditEntry
from symfonic.storage import open_store

async def main(url):
    async with open_store(url) as store:
        for n in range(5):
            await store.append_audit(AuditEntry("reassigned", f"s{n}", "assistant"))
        os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main, sys.argv[1])
"""


async def test_a_worker_killed_before_sealing_loses_no_record(store: Any, store_url: str) -> None:
    session_id = await new_session(store)
    await claimed(store, session_id)
    killed = await anyio.run_process(
        [sys.executable, "-c", KILLED_BEFORE_SEALING, store_url], check=False
    )
    assert killed.returncode == -signal.SIGKILL
    assert (await store.audit_anchor()).unsealed == 7
    trail = await records(store)  # the next seal, by any worker, picks them up
    assert [r.event for r in trail] == ["asked", "answered"] + ["reassigned"] * 5
    assert await verify_log(store) == (7, None)


async def test_a_record_committed_after_a_later_one_was_sealed_takes_the_next_place(
    store: Any, store_url: str
) -> None:
    """PostgreSQL numbers records before commit: a seal skips a number still in flight and
    waits for it; a number whose transaction rolled back stops being waited for."""
    if store.dialect is not Dialect.POSTGRESQL:
        pytest.skip("SQLite numbers records under its write lock, in commit order")
    late, rolled_back = await asyncpg.connect(store_url), await asyncpg.connect(store_url)
    intake = "INSERT INTO symfonic_audit_intake (event, session_id, agent) VALUES ($1, 's', 'a')"
    try:
        for connection, event in ((late, "late"), (rolled_back, "rolled back")):
            await connection.execute("BEGIN")
            await connection.execute(intake, event)
        await store.append_audit(AuditEntry("early", "s", "a"))
        assert await store.seal_audit() == 1
        await late.execute("COMMIT")
        await rolled_back.execute("ROLLBACK")
        assert await store.seal_audit() == 1
        trail = await records(store)
        assert [(r.sequence, r.event) for r in trail] == [(1, "early"), (2, "late")]
        assert await verify_log(store) == (2, None)
        assert (await store.audit_anchor()).unsealed == 0
        # The rolled-back number is let go once every transaction open at the seal has ended
        # (the server's other clients' too).
        with anyio.fail_after(60):
            while await store.read_rows(audit_log.ANY_UNSEALED, {}, "test"):
                assert await store.seal_audit() == 0
                await anyio.sleep(0.1)
    finally:
        await late.close()
        await rolled_back.close()
