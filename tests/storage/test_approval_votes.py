"""Approvals of a pause that needs several, counted in the store, on SQLite and PostgreSQL.

Each vote is one transaction: counted while fewer than needed, the pause still
pending; the one that completes the quorum claims the pause in it; a principal
is counted once (a second vote writes nothing); a pause no longer pending takes
no vote. An edit replaces the call in the checkpoint, the digest and the question,
and leaves only the editor's vote; a vote for the old digest then writes nothing. Two
workers' last approvals arriving at once are counted one after the other, so
exactly one of them claims. Every vote is an ``approved`` audit record.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timedelta

import anyio
import pytest

from symfonic.core.contracts.audit import verify_log
from symfonic.core.contracts.retention import PruneBatch
from symfonic.core.contracts.store import (
    Ballot,
    CheckpointRecord,
    Claim,
    PauseRecord,
    Proposal,
    Store,
    VoteOutcome,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.core.contracts.webhooks import DeliveryQuery, WebhookEventType
from symfonic.server.service.webhook_payloads import body_of
from symfonic.storage import open_store
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Statement
from test_store_pauses import HOUR, T0, new_session, paused

pytestmark = pytest.mark.anyio

APPROVE = {"decision": "approve"}
VOTED_AT = T0 + timedelta(minutes=1)


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database (its own pool)."""
    async with open_store(store_url) as opened:
        yield opened


async def needing(store: Store, approvers: int) -> PauseRecord:
    session_id = await new_session(store)
    return await paused(
        store,
        session_id,
        kind=InteractionKind.APPROVAL,
        audience="approvers",
        approvals_required=approvers,
        allow_requester=False,
        args_digest="ab" * 32,
    )


def vote_of(pause: PauseRecord, principal: str, at: datetime = VOTED_AT) -> Ballot:
    claim = Claim(pause.pause_id, uuid.uuid4().hex, principal, APPROVE, "resolved", at, at + HOUR)
    return Ballot(claim, pause.args_digest)


async def current(store: Store, pause_id: str) -> PauseRecord:
    pause = await store.get_pause(pause_id)
    assert pause is not None
    return pause


async def test_the_first_of_two_approvals_is_counted_and_the_second_claims(store: Store) -> None:
    pause = await needing(store, 2)
    assert (pause.approvals_required, pause.allow_requester) == (2, False)

    first = await store.vote_pause(vote_of(pause, "carol"))
    assert first is not None and first.claimed is None and not first.already
    assert [v.principal for v in first.pause.approvals] == ["carol"]
    row = await current(store, pause.pause_id)
    assert row.state is PauseState.PENDING
    assert [(v.principal, v.at) for v in row.approvals] == [("carol", VOTED_AT)]
    assert (row.approvals_required, row.allow_requester) == (2, False)

    last = vote_of(pause, "dave", VOTED_AT + timedelta(seconds=5))
    second = await store.vote_pause(last)
    assert second is not None and second.claimed is not None
    assert second.claimed.checkpoint is not None
    row = await current(store, pause.pause_id)
    claim_id = last.claim.claim_id
    assert (row.state, row.answered_by, row.claim_id) == (PauseState.CLAIMED, "dave", claim_id)
    assert [v.principal for v in row.approvals] == ["carol", "dave"]


async def test_a_principal_is_counted_once_and_a_second_vote_is_a_replay(store: Store) -> None:
    pause = await needing(store, 2)
    await store.vote_pause(vote_of(pause, "carol"))
    again = await store.vote_pause(vote_of(pause, "carol", VOTED_AT + timedelta(seconds=9)))
    row = await current(store, pause.pause_id)
    assert again == VoteOutcome(row, already=True)
    assert [(v.principal, v.at) for v in again.pause.approvals] == [("carol", VOTED_AT)]
    assert row.state is PauseState.PENDING and len(row.approvals) == 1
    await store.seal_audit()
    approved = [r for r in await store.audit_records(limit=100) if r.event == "approved"]
    assert [r.principal for r in approved] == ["carol"]


def edit_of(pause: PauseRecord, principal: str, checkpoint: CheckpointRecord) -> Ballot:
    """dave's edit: the checkpoint's call proposed with other arguments and digest."""
    answer = {"decision": "edit", "args": {"amount": 5}}
    at = VOTED_AT + timedelta(seconds=2)
    claim = Claim(pause.pause_id, uuid.uuid4().hex, principal, answer, "resolved", at, at + HOUR)
    interaction = {**checkpoint.body.get("interaction", {}), "args": {"amount": 5}}
    body = {**checkpoint.body, "interaction": interaction}
    proposal = Proposal(replace(checkpoint, body=body), "cd" * 32, "Pay 5 EUR")
    return Ballot(claim, pause.args_digest, proposal)


async def test_an_edit_is_a_new_proposal_and_a_vote_for_the_old_one_writes_nothing(
    store: Store,
) -> None:
    pause = await needing(store, 2)
    checkpoint = await store.load_checkpoint(pause.pause_id)
    assert checkpoint is not None
    await store.vote_pause(vote_of(pause, "carol"))
    edited = await store.vote_pause(edit_of(pause, "dave", checkpoint))
    assert edited is not None and edited.claimed is None and not edited.stale
    assert [v.principal for v in edited.pause.approvals] == ["dave"]
    row = await current(store, pause.pause_id)
    assert (row.state, row.args_digest) == (PauseState.PENDING, "cd" * 32)
    assert row.query == edited.pause.query == "Pay 5 EUR"  # the edit's words, in its transaction
    assert [v.principal for v in row.approvals] == ["dave"]
    proposed = await store.load_checkpoint(pause.pause_id)
    assert proposed is not None and proposed.body["interaction"]["args"] == {"amount": 5}

    # erin read the pause before the edit: her vote is for arguments no longer proposed.
    stale = await store.vote_pause(vote_of(pause, "erin"))
    assert stale == VoteOutcome(row, stale=True)
    assert [v.principal for v in (await current(store, pause.pause_id)).approvals] == ["dave"]
    # carol's earlier vote no longer counts: hers, for the new digest, is counted anew.
    carol = await store.vote_pause(vote_of(row, "carol", VOTED_AT + timedelta(seconds=5)))
    assert carol is not None and carol.claimed is not None
    done = await current(store, pause.pause_id)
    assert [v.principal for v in done.approvals] == ["dave", "carol"]

    await store.seal_audit()
    records = [r for r in await store.audit_records(limit=100) if r.pause_id == pause.pause_id]
    said = [
        (r.event, r.principal, r.decision, r.args_digest, r.edited_args_digest) for r in records
    ]
    assert said[1:] == [
        ("approved", "carol", "approve", "ab" * 32, None),
        ("approved", "dave", "edit", "ab" * 32, "cd" * 32),
        ("approved", "carol", "approve", "cd" * 32, None),
        ("answered", "carol", "approve", "cd" * 32, None),
    ]
    checked, broken = await verify_log(store)
    assert broken is None and checked >= len(records)


async def test_a_pause_no_longer_pending_or_past_its_expiry_takes_no_vote(store: Store) -> None:
    pause = await needing(store, 2)
    assert await store.vote_pause(vote_of(pause, "carol", T0 + HOUR)) is None
    assert (await current(store, pause.pause_id)).approvals == ()
    await store.vote_pause(vote_of(pause, "carol"))
    # Too few approvals when it expires: it expires as any pause does.
    await store.sweep(T0 + 2 * HOUR)
    row = await current(store, pause.pause_id)
    assert row.state is PauseState.EXPIRED and [v.principal for v in row.approvals] == ["carol"]
    assert await store.vote_pause(vote_of(pause, "dave")) is None


async def test_the_last_two_approvals_racing_on_two_workers_claim_once(
    store: Store, other: Store
) -> None:
    for _ in range(5):
        pause = await needing(store, 3)
        await store.vote_pause(vote_of(pause, "carol"))
        outcomes: list[VoteOutcome | None] = []

        async def approve(
            worker: Store,
            principal: str,
            pause: PauseRecord = pause,
            outcomes: list[VoteOutcome | None] = outcomes,
        ) -> None:
            outcomes.append(await worker.vote_pause(vote_of(pause, principal)))

        async with anyio.create_task_group() as group:
            group.start_soon(approve, store, "dave")
            group.start_soon(approve, other, "erin")

        claims = [o for o in outcomes if o is not None and o.claimed is not None]
        counted = [o for o in outcomes if o is not None and o.claimed is None]
        assert (len(claims), len(counted)) == (1, 1)
        row = await current(store, pause.pause_id)
        assert row.state is PauseState.CLAIMED and len(row.approvals) == 3


async def test_every_vote_is_an_audit_record_in_the_chain(store: Store) -> None:
    pause = await needing(store, 2)
    await store.vote_pause(vote_of(pause, "carol"))
    await store.vote_pause(vote_of(pause, "dave"))
    await store.seal_audit()
    records = [r for r in await store.audit_records(limit=100) if r.pause_id == pause.pause_id]
    said = [(r.event, r.principal, r.decision) for r in records]
    assert said == [
        ("asked", "ann", None),
        ("approved", "carol", "approve"),
        ("approved", "dave", "approve"),
        ("answered", "dave", "approve"),
    ]
    assert all(r.args_digest == "ab" * 32 for r in records)
    checked, broken = await verify_log(store)
    assert broken is None and checked >= len(records)


VOTES = Statement(
    "SELECT count(*) AS votes FROM symfonic_pause_approvals WHERE pause_id = :pause_id"
)


@pytest.mark.parametrize("keep_answered", [False, True])
async def test_pruning_a_session_deletes_its_votes_and_keeps_who_approved_on_the_row(
    store: Store, keep_answered: bool
) -> None:
    assert isinstance(store, SqlStore)
    pause = await needing(store, 2)
    await store.vote_pause(vote_of(pause, "carol"))
    await store.vote_pause(vote_of(pause, "dave"))
    await store.abandon_claim(
        pause.session_id, (await current(store, pause.pause_id)).claim_id or ""
    )

    async def votes() -> int:
        (row,) = await store.read_rows(VOTES, {"pause_id": pause.pause_id}, "votes")
        return int(row["votes"])

    assert await votes() == 2
    month = T0 + timedelta(days=31)
    report = await store.prune(PruneBatch(month - timedelta(days=1), month, 10, keep_answered))
    assert report.sessions == 1
    assert await votes() == 0
    kept = await store.get_pause(pause.pause_id)
    if keep_answered:
        assert kept is not None and [v.principal for v in kept.approvals] == ["carol", "dave"]
    else:
        assert kept is None


async def test_a_counted_vote_owes_pause_approved_saying_who_and_where_it_stands(
    store: Store,
) -> None:
    url = "http://receiver.invalid/hook"
    await store.register_webhook(url, [WebhookEventType.PAUSE_APPROVED])
    pause = await needing(store, 2)
    await store.vote_pause(vote_of(pause, "carol"))
    await store.vote_pause(vote_of(pause, "dave"))  # completes it: answered, not approved
    owed = await store.list_deliveries(DeliveryQuery(type=WebhookEventType.PAUSE_APPROVED))
    assert [(d.pause_id, d.detail) for d in owed] == [(pause.pause_id, {"approved_by": "carol"})]
    body = body_of(owed[0], await current(store, pause.pause_id))
    assert body is not None
    sent = json.loads(body)
    assert sent["type"] == "pause.approved" and sent["data"]["approved_by"] == "carol"
    assert sent["data"]["approvals_required"] == 2 and sent["data"]["token"] is None
    assert [v["principal"] for v in sent["data"]["approvals"]] == ["carol", "dave"]
