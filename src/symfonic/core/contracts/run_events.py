"""The events of runs, kept in the store so a stream on any worker can replay and follow them
(docs/runs.md). Only the worker running a run appends to it, and what one run keeps is bounded,
never dropping its terminal event.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from symfonic.core.contracts.errors import TurnStopped
from symfonic.core.contracts.types import (
    STREAM_EVENTS,
    TERMINAL_EVENTS,
    ErrorEvent,
    Event,
    TextDeltaEvent,
)

# Rows one run keeps at most, its terminal event included.
RUN_EVENT_LIMIT = 1000

EVENT_TYPES: dict[str, type[Event]] = {kind.type: kind for kind in STREAM_EVENTS}


class RunState(enum.StrEnum):
    # A message waiting in its session's queue (`.run_queue`): no lease, no events.
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETE = "complete"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # Cancelled by a rollback: kept only as what its turn's publish checks, shown to
    # nobody (a 404, as for a run that never was), deleted with the TTL.
    FORGOTTEN = "forgotten"


@dataclass(frozen=True)
class NewRun:
    """A run whose events are to be kept, as its worker starts it.

    ``principal`` owns the session; ``audience`` and ``pause_id`` are set for a
    resume (who may answer the pause it answered). ``lease_until``: the worker
    renews it while it runs; a run left ``running`` past it was lost with its
    worker, and reads as ``failed``.
    """

    run_id: str
    session_id: str
    principal: str
    created_at: datetime
    lease_until: datetime
    audience: str | None = None
    pause_id: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """A run as the store keeps it; `state_at` is what it reads as."""

    run_id: str
    session_id: str
    principal: str
    audience: str | None
    pause_id: str | None
    state: RunState
    outcome: dict[str, Any] | None
    created_at: datetime
    ended_at: datetime | None
    lease_until: datetime
    events: int
    dropped: int

    def state_at(self, now: datetime) -> RunState:
        """``failed`` for a run whose worker stopped renewing it; else as recorded."""
        if self.state is RunState.RUNNING and self.lease_until < now:
            return RunState.FAILED
        return self.state


@dataclass(frozen=True)
class RunEvent:
    """One kept event of a run, at its number (1, 2, ...)."""

    position: int
    event: Event


def coalesced(events: Sequence[Event]) -> list[Event]:
    """``events`` with each run of adjacent text deltas merged into one."""
    merged: list[Event] = []
    for event in events:
        previous = merged[-1] if merged else None
        if isinstance(event, TextDeltaEvent) and isinstance(previous, TextDeltaEvent):
            merged[-1] = TextDeltaEvent(text=previous.text + event.text)
        else:
            merged.append(event)
    return merged


def kept_rows(events: Sequence[Event], stored: int) -> list[Event]:
    """The (coalesced) events of an append that fit in the run's bound, after ``stored`` rows.

    The last row is the terminal event's: anything else stops one short of it.
    """
    room = RUN_EVENT_LIMIT - stored
    keep: list[Event] = []
    for event in events:
        terminal = isinstance(event, TERMINAL_EVENTS)
        if room - len(keep) > (0 if terminal else 1):
            keep.append(event)
    return keep


class RunEventLog(Protocol):
    """Runs and their events: begun, appended, ended, replayed, watched and pruned."""

    async def begin_run_log(self, run: NewRun, first: Event | None = None) -> None:
        """Record ``run`` as ``running``, with ``first`` as its event 1 if given."""
        ...

    async def renew_run_log(self, run_id: str, lease_until: datetime) -> bool:
        """Extend a running run's lease; ``False`` if it is not running."""
        ...

    async def append_run_events(self, run_id: str, events: Sequence[Event]) -> int:
        """Keep ``events`` after the run's last, coalesced and within the bound, in
        one transaction; how many rows were written. Wakes the run's watchers."""
        ...

    async def end_run_log(
        self,
        run_id: str,
        state: RunState,
        outcome: dict[str, Any] | None,
        at: datetime,
        last: Sequence[Event] = (),
    ) -> bool:
        """Keep ``last`` (its final events) and move a running run to ``state`` with its
        outcome, in one transaction, so that whoever has read the run's terminal event
        reads it ended; ``False`` (and nothing kept) if it had ended."""
        ...

    async def cancel_run(self, run_id: str, at: datetime) -> bool:
        """Cancel a running run before its turn settles, in one transaction; ``False`` if
        it ended, its lease lapsed, or its turn already settled (published, paused).

        The transaction takes away what its turn would settle with (a first turn's
        run marker; a resume's claim, ``abandoned``), so the turn can publish
        nothing after it; marks the run ``cancelled``; keeps an ``error`` event
        (``run_cancelled``) as its last; and wakes its watchers, among them the
        worker running it, which stops it.
        """
        ...

    async def run_record(self, run_id: str) -> RunRecord | None: ...

    async def run_events_after(self, run_id: str, position: int, *, limit: int) -> list[RunEvent]:
        """Up to ``limit`` kept events numbered after ``position``, oldest first."""
        ...

    def watch_run_events(self) -> AsyncGenerator[list[str], None]:
        """The ids of runs with events committed from now on, in batches, until closed.

        The first batch is empty: the watch is established. A run may be named
        again with nothing new; none is missed. Raises ``StoreUnavailable``
        when the watch is lost; close it with ``aclose``.
        """
        ...

    async def prune_run_events(self, ended_before: datetime, batch: int) -> int:
        """Delete the events of up to ``batch`` runs that ended before ``ended_before``;
        how many runs lost their events. One transaction."""
        ...


class SessionRuns(Protocol):
    """Which kept run a session is running now: what a second client of the session
    joins instead of being refused as busy."""

    async def running_run(self, session_id: str, now: datetime) -> RunRecord | None:
        """The session's run in progress at ``now``: ``running``, its lease held, and its
        turn still holding the session (a first turn's run marker, a resume's claim).

        ``None`` when there is none. A turn whose events are not kept is not one,
        nor is a run whose turn already settled (published or paused) and whose
        end is about to be recorded: a client that read its last event and sends
        the next message must start a new turn, not join the old one.
        """
        ...


CANCELLED = ErrorEvent(code=TurnStopped.code, message=TurnStopped.message)
