"""Messages that wait for their session: the storage role that keeps a session's queue.

Taking the head is one transaction that sets the run marker, starts its run and removes
the message, so a message is taken at most once and never lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from symfonic.core.contracts.sessions import RunStart

QueuedPausePolicy = Literal["reject", "abandon"]


@dataclass(frozen=True)
class QueuedTurn:
    """A message waiting for its session, and whose it is.

    ``principal`` and ``scopes``: who sent it, as the turn answers them.
    ``owner``: the session's owner, who may see the run (as for any run).
    """

    run_id: str
    session_id: str
    owner: str
    principal: str
    scopes: frozenset[str]
    message: str
    on_pending_pause: QueuedPausePolicy
    queued_at: datetime


@dataclass(frozen=True)
class TakenTurn:
    """A queued message taken: its session held by its run, as a first turn's is.
    ``kept``: the events its run kept already (its ``turn.started``, when a stopping
    worker handed it back)."""

    turn: QueuedTurn
    start: RunStart
    kept: int = 0


@dataclass(frozen=True)
class QueueHead:
    """The first message of a session's queue, whose session no turn holds now.

    ``lapsed``: a run marker is there, past its lease (its worker died); else the
    session has none (its last turn ended, maybe on a worker that runs no queue).
    """

    session_id: str
    run_id: str
    lapsed: bool


class RunQueue(Protocol):
    """A session's queued messages: kept in order, taken once each, or cancelled."""

    async def enqueue_turn(self, turn: QueuedTurn) -> None:
        """Keep ``turn`` behind every message already queued on its session, and its
        run as ``queued``, in one transaction."""
        ...

    async def take_queued_turn(
        self, session_id: str, now: datetime, lease_until: datetime
    ) -> TakenTurn | None:
        """Take the head of the session's queue if the session is free, in one
        transaction: the session's run marker becomes the message's run (held until
        ``lease_until``), its run ``running``, and the message leaves the queue.
        ``None`` when nothing is queued, the session is held, or the head waits for
        a pending pause. Of several workers asking at once, one takes it."""
        ...

    async def cancel_queued_turn(self, run_id: str, at: datetime) -> bool:
        """Remove a message that is still queued and cancel its run, in one
        transaction; ``False`` if it was taken (or cancelled) first."""
        ...

    async def free_queue_heads(self, now: datetime, limit: int) -> list[QueueHead]:
        """The heads of up to ``limit`` queues whose session no turn holds (no run
        marker, or one whose lease lapsed, and no claimed pause): those a sweep may
        take."""
        ...

    async def requeue_turn(self, turn: QueuedTurn, now: datetime) -> bool:
        """Put a first turn's run back at the head of its session's queue, in one
        transaction: the run, still ``running`` with only its ``turn.started`` kept,
        reads ``queued`` again under its id, and the session, if free, is handed over
        as by `hand_over_queues`; ``False`` (nothing changed) for any other run."""
        ...

    async def hand_over_queues(self, session_ids: Sequence[str], now: datetime) -> int:
        """Mark each free session among ``session_ids`` as held by its queue's head with
        a lease that lapsed at ``now``, as if the worker holding it had died, so the
        next sweep of any worker takes the head; how many, in one transaction."""
        ...
