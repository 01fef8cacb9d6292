"""The storage port: what the runtime needs from a database, and nothing more.

Every method that changes state is one transaction in the adapter, and every
single-use transition (claim, publish, abandon) is one conditional statement
whose row count says who won -- never a read followed by a write. The adapters
(SQLite, PostgreSQL) differ only in how they connect and lock, so one test
suite runs against both.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    InteractionKind,
    PauseQuestion,
    PauseState,
)
from symfonic.core.contracts.webhooks import (
    DeliveryLease,
    DeliveryQuery,
    DeliverySettlement,
    Destination,
    FailedTurn,
    WebhookDelivery,
    WebhookEventType,
)
from symfonic.core.messages import MessageBody


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    principal: str
    agent: str
    revision: int
    metadata: dict[str, Any]
    created_at: datetime
    running: bool = False


@dataclass(frozen=True)
class RunStart:
    """A first turn's run marker, set: the session as it was marked, its committed
    history at that revision, and whether a pause was still waiting for an answer
    (only possible when such a pause was not to refuse the turn)."""

    session: SessionRecord
    history: list[MessageBody]
    pending_pause: bool


@dataclass(frozen=True)
class CheckpointRecord:
    """The in-flight turn of one pause: its messages, counters and base revision."""

    pause_id: str
    session_id: str
    format_version: int
    base_revision: int
    body: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class PauseRecord(PauseQuestion):
    """A pause as stored: its question, whose turn it paused, its state and its answer."""

    session_id: str
    principal: str
    agent: str
    audience: str | None
    base_revision: int
    state: PauseState
    created_at: datetime
    supersedes: str | None = None
    claim_id: str | None = None
    lease_until: datetime | None = None
    answered_by: str | None = None
    answered_at: datetime | None = None
    answer: Answer = None
    answer_status: AnswerStatus | None = None
    outcome: dict[str, Any] | None = None
    parent_session_id: str | None = None
    """Set on a delegate's own pause: the session whose pause stands for it. Such a
    pause is never listed nor answered by its token; the parent's pause is."""
    delegated_pause_id: str | None = None
    """Set on a parent's pause that stands for a delegate's: that pause's id."""
    edited_args_digest: str | None = None
    """For an approval answered with an edit: the digest of the edited call, written
    with the claim beside ``args_digest`` (what was asked), so the row shows both."""

    def answerable(self, now: datetime) -> bool:
        """Whether an answer sent at ``now`` may still claim this pause: it is pending
        and unexpired. A pending pause past its expiry is not, whether or not the
        sweeper has marked it expired yet; the claim's own statement says the same."""
        return self.state is PauseState.PENDING and self.expires_at > now


@dataclass(frozen=True)
class Claim:
    """What the winner of a claim writes: who answered, when, with what.

    The claim is made at ``at``: the pause must be unexpired then.
    """

    pause_id: str
    claim_id: str
    principal: str
    answer: Answer
    status: AnswerStatus
    at: datetime
    lease_until: datetime
    edited_args_digest: str | None = None


@dataclass(frozen=True)
class ClaimedPause:
    """What the winner of a claim needs to run the turn on, read as it claimed.

    ``checkpoint`` is ``None`` only when the pause's checkpoint is missing (a
    corrupt store); ``history`` is the session's committed history at the
    pause's base revision.
    """

    checkpoint: CheckpointRecord | None
    history: list[MessageBody]


@dataclass(frozen=True)
class RunRequest:
    """A first turn asking to hold its session, and what may refuse it.

    Refused when the session does not exist, is not ``principal``'s (unless
    ``None``), has another unexpired run marker, has a pause being answered, is
    not at ``base_revision`` (if given), or, with ``refuse_pending``, has a
    pause still waiting for an answer.
    """

    session_id: str
    run_id: str
    now: datetime
    lease_until: datetime
    principal: str | None = None
    base_revision: int | None = None
    refuse_pending: bool = False


@dataclass(frozen=True)
class NewPause:
    """A pending pause and its checkpoint, to be written together.

    ``run_id``: the first turn that paused; only the run still holding the
    session records it, clearing its marker. ``supersedes``: the claim of the
    resumed turn that paused again; its pause becomes ``superseded``.
    """

    pause: PauseRecord
    checkpoint: CheckpointRecord
    supersedes: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class TurnPublish:
    """A first turn's messages, to append at the revision it started from."""

    session_id: str
    base_revision: int
    messages: Sequence[MessageBody]
    run_id: str


@dataclass(frozen=True)
class ResumePublish:
    """A resumed turn's messages and answer, to publish by the claim that holds its pause."""

    session_id: str
    claim_id: str
    messages: Sequence[MessageBody]
    answer: str


@dataclass(frozen=True, order=True)
class PausePosition:
    """Where a pause stands in a listing's order: by ``created_at``, then ``pause_id``.

    The order is total (ids are unique), so a page that starts after a position
    neither repeats nor skips a pause, however many are created meanwhile.
    """

    created_at: datetime
    pause_id: str

    @classmethod
    def of(cls, pause: PauseRecord) -> PausePosition:
        return cls(pause.created_at, pause.pause_id)


@dataclass(frozen=True)
class PauseQuery:
    """Pauses in ``state`` that ``principal`` (with ``scopes``) may answer, at most ``limit``.

    The optional fields narrow it: only pauses after ``after`` in the listing's
    order (a page's start; :meth:`Store.count_pauses` ignores it), of one of
    ``agents``, of ``kind``, addressed to ``audience``, whose question contains
    ``text`` (ignoring case), or that expire after ``unexpired_at``.
    """

    state: PauseState
    principal: str
    scopes: frozenset[str]
    limit: int = 100
    after: PausePosition | None = None
    agents: frozenset[str] | None = None
    kind: InteractionKind | None = None
    audience: str | None = None
    text: str | None = None
    unexpired_at: datetime | None = None


@dataclass(frozen=True)
class PendingCount:
    """How many pending pauses one agent's turns made of one interaction kind."""

    agent: str
    kind: InteractionKind
    count: int


@dataclass(frozen=True)
class PruneBatch:
    """One batch of retention: up to ``batch`` finished sessions idle since ``cutoff``."""

    cutoff: datetime
    now: datetime
    batch: int
    keep_answered: bool


@dataclass(frozen=True)
class SweepReport:
    expired: int
    abandoned: int
    # Run markers cleared now by the cleanups their turns owed while the store
    # could not write (a marker another turn has since taken is not counted).
    runs_ended: int = 0


@dataclass(frozen=True)
class PruneReport:
    """What one batch of retention deleted: sessions, and their messages and pauses."""

    sessions: int
    messages: int
    pauses: int


@dataclass(frozen=True)
class PauseChange:
    """A pause created or moved to another state, as the store recorded it.

    ``position`` grows with every change the store records (the live feed's
    position); ``state`` is the state the pause moved to, ``at`` when. ``pause``
    is the pause's row as it is when the change is read, so a reader can decide
    who may see it exactly as :meth:`Store.list_pauses` does.
    """

    position: int
    state: PauseState
    at: datetime
    pause: PauseRecord


@dataclass(frozen=True)
class LeasedDelivery:
    """A delivery this worker now holds, with its pause's row as it is now (if any)."""

    delivery: WebhookDelivery
    pause: PauseRecord | None


class Store(Protocol):
    """The port every adapter implements; open it with ``async with``."""

    url: str

    @property
    def write_failure(self) -> str | None:
        """Why the last write failed for a reason that lasts until someone acts (a
        full disk), in words; ``None`` once a write has committed since."""
        ...

    async def __aenter__(self) -> Store: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the store answers; while
        :attr:`write_failure` is set, unless a probe write commits too
        (``StoreCannotWrite``, with the reason)."""
        ...

    async def signing_secret(self) -> bytes:
        """The database's token secret, created by the first worker that asks."""
        ...

    # sessions and history
    async def create_session(self, session: SessionRecord) -> None: ...

    async def get_session(self, session_id: str) -> SessionRecord | None: ...

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]: ...

    async def begin_run(self, request: RunRequest) -> RunStart | None:
        """Mark a first turn running, in one conditional statement; ``None`` if refused.

        The caller reads which of :class:`RunRequest`'s refusals it was. The
        history the turn runs on comes with the marker, read in the same
        transaction.
        """
        ...

    async def end_run(
        self, session_id: str, run_id: str, failure: FailedTurn | None = None
    ) -> None:
        """Clear this run's marker; with ``failure``, owe ``turn.failed`` in the same
        transaction (once, however often it is run)."""
        ...

    async def prune(self, batch: PruneBatch) -> PruneReport:
        """Delete one batch of finished sessions idle since before the cutoff.

        One transaction. A session with a pause pending or claimed, or a first
        turn running, is never deleted; see :mod:`symfonic.storage.retention`.
        """
        ...

    async def publish_turn(self, publish: TurnPublish) -> int:
        """Append a first turn at its base revision, ending its run; raises RevisionConflict."""
        ...

    # pauses and checkpoints
    async def record_pause(self, new: NewPause) -> None:
        """Write a pending pause and its checkpoint together, or nothing.

        Raises RevisionConflict when ``new.run_id`` no longer holds the session,
        PauseAbandoned when the claim ``new.supersedes`` names is no longer held.
        """
        ...

    async def get_pause(self, pause_id: str) -> PauseRecord | None: ...

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None: ...

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        """The single-use claim: pending and unexpired → claimed, one statement.

        ``None`` when the claim lost. The winner gets the pause's checkpoint and
        the history it continues, read in the same transaction as the claim.
        """
        ...

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        """The pause this claim took, in whatever state it is now."""
        ...

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool: ...

    async def publish_resume(self, publish: ResumePublish) -> int:
        """Append a resumed turn at its pause's base revision and mark the pause published.

        Raises PauseAbandoned when the claim no longer holds, RevisionConflict
        when another turn was published first; either way nothing is written.
        """
        ...

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        """Move this claim's pause to ``abandoned``; with ``failure``, owe ``turn.failed``
        in the same transaction. False if the pause had already left ``claimed``."""
        ...

    async def abandon_pending(self, session_id: str) -> int: ...

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        """The session's pending or claimed pause, if any."""
        ...

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        """Every pause of a session, oldest first: the audit trail."""
        ...

    async def list_pauses(self, query: PauseQuery) -> list[PauseRecord]:
        """The pauses the query's principal may answer, oldest first (by
        :class:`PausePosition`), starting after ``query.after``, at most ``query.limit``."""
        ...

    async def count_pauses(self, query: PauseQuery) -> int:
        """How many pauses :meth:`list_pauses` would give with no ``after`` and no limit."""
        ...

    async def count_pending(self) -> list[PendingCount]:
        """Every pending pause a person may answer (a delegate's own is answered through
        its parent's, as in :meth:`list_pauses`), counted by agent and kind in one read."""
        ...

    async def sweep(self, now: datetime) -> SweepReport:
        """Expire stale pending pauses and abandon claims whose lease ran out.

        First, write the cleanups this worker's failed turns owe since the store
        could not write them (abandon their claims, clear their run markers), so
        their pauses and sessions take turns again.
        """
        ...

    # the record of pause changes (the live feed's source)
    async def pause_change_position(self) -> int:
        """The newest recorded change's position; 0 before the first."""
        ...

    async def pause_changes_since(self, position: int, *, limit: int) -> list[PauseChange] | None:
        """The changes after ``position``, oldest first; ``None`` if they cannot be replayed.

        Where changes can commit out of position order (PostgreSQL), the list
        begins with the few changes at or before ``position`` that may still
        have been uncommitted when it was handed out: a reader may see a change
        twice, in order, never miss one.

        ``None`` when ``position`` is not one this store handed out (ahead of
        its newest, or behind changes retention already deleted), or when more
        than ``limit`` changes followed it: the reader starts from the current
        pauses instead.
        """
        ...

    def watch_pause_changes(self) -> AsyncGenerator[list[PauseChange], None]:
        """Every change committed from now on, in batches, in commit order, until closed.

        The first batch may be empty: it says the watch is established, and
        every change committed after it arrived is in a later batch. Raises
        ``StoreUnavailable`` when the watch is lost (changes may then have been
        missed); close it with ``aclose``.
        """
        ...

    # the webhook outbox (see symfonic.core.contracts.webhooks)
    async def register_webhook(self, url: str, events: Sequence[WebhookEventType]) -> None:
        """``url`` now wants exactly ``events``, from the next change on; one transaction."""
        ...

    async def announce_expiring(self, now: datetime, lead_seconds: float) -> int:
        """Owe ``pause.expiring`` for pending pauses whose expiry is near, once each.

        Near: within ``lead_seconds``, or a tenth of the pause's lifetime if that is
        shorter, and not yet passed. How many deliveries this call added.
        """
        ...

    async def due_destinations(self, urls: Sequence[str], now: datetime) -> list[Destination]:
        """The circuits of those of ``urls`` with a delivery due and unleased, by URL.

        One read: an indexed probe of each URL's deliveries.
        """
        ...

    async def lease_deliveries(self, lease: DeliveryLease) -> list[LeasedDelivery]:
        """Take due deliveries for a while, oldest first, skipping any another worker holds."""
        ...

    async def settle_delivery(self, settlement: DeliverySettlement) -> bool:
        """Record an attempt's end; false when the lease no longer holds (nothing written)."""
        ...

    async def settle_deliveries(self, settlements: Sequence[DeliverySettlement]) -> list[bool]:
        """Record many attempts' ends in one transaction; each as :meth:`settle_delivery`."""
        ...

    async def prune_failed_deliveries(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` deliveries that failed before ``before``; how many."""
        ...

    async def webhook_destinations(self, urls: Sequence[str] | None = None) -> list[Destination]:
        """The circuits of ``urls`` (``None``: every destination), by URL."""
        ...

    async def swap_destination(self, expected: Destination, new: Destination) -> bool:
        """Write ``new`` if the circuit is still at ``expected.version``; false: it moved."""
        ...

    async def list_deliveries(self, query: DeliveryQuery) -> list[WebhookDelivery]: ...

    async def resend_delivery(self, delivery_id: int, now: datetime) -> WebhookDelivery | None:
        """A settled delivery back to pending, attempts 0, same message id; ``None``: no such."""
        ...
