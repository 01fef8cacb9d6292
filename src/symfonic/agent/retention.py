"""How long finished sessions and runs' kept events are kept, and pruning them one short
transaction per batch. Sessions are deleted only if an operator asks; what may be deleted at all
is the store's rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import anyio
import anyio.lowlevel

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.retention import PruneBatch, PruneReport, RetentionStore
from symfonic.core.contracts.run_events import RunEventLog

PRUNE_BATCH = 100
# How long the events of a run are kept after it ended (``--run-events-ttl``).
RUN_EVENTS_TTL = timedelta(hours=1)
_AGE = re.compile(r"(\d+)([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


@dataclass(frozen=True)
class Retention:
    """Delete finished sessions idle for longer than ``older_than``.

    ``keep_answered`` keeps the rows of answered pauses (who answered, when and
    what) as an audit after their session is gone. ``batch``: sessions per
    transaction.
    """

    older_than: timedelta
    keep_answered: bool = False
    batch: int = PRUNE_BATCH

    def __post_init__(self) -> None:
        if self.older_than <= timedelta(0):
            raise ConfigurationError("retention must keep sessions for some time, not none")
        if self.batch < 1:
            raise ConfigurationError("a retention batch must hold at least one session")


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h`` or ``90m`` as a duration; a clear error for anything else."""
    match = _AGE.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise ConfigurationError(
            f"{text!r} is not an age: write a whole number and a unit, e.g. 30d, 12h or 90m"
        )
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


async def prune(
    store: RetentionStore,
    retention: Retention,
    now: datetime,
    on_batch: Callable[[PruneReport], None] | None = None,
) -> PruneReport:
    """Prune batch after batch until one comes back short; the totals."""
    cutoff = now - retention.older_than
    sessions = messages = pauses = 0
    while True:
        batch = PruneBatch(cutoff, now, retention.batch, retention.keep_answered)
        report = await store.prune(batch)
        sessions, messages, pauses = (
            sessions + report.sessions,
            messages + report.messages,
            pauses + report.pauses,
        )
        if on_batch is not None and report.sessions:
            on_batch(report)
        if report.sessions < retention.batch:
            return PruneReport(sessions=sessions, messages=messages, pauses=pauses)
        # Let the turns waiting on this worker run between two batches.
        await anyio.lowlevel.checkpoint()


async def prune_run_events(
    store: RunEventLog, ttl: timedelta, now: datetime, batch: int = PRUNE_BATCH
) -> int:
    """Delete the runs (and their events) that ended more than ``ttl`` ago, batch
    after batch until one comes back short; how many runs."""
    pruned = 0
    while True:
        count = await store.prune_run_events(now - ttl, batch)
        pruned += count
        if count < batch:
            return pruned
        await anyio.lowlevel.checkpoint()
