"""The background sweep every worker runs: owed cleanups, expired pauses, lapsed claims, old run
events, retention, then queued messages nobody is taking. Each transition is one conditional
statement, so any number of workers may sweep at once.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import anyio

from symfonic.agent.retention import RUN_EVENTS_TTL, Retention
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.runs import WorkerRuns

logger = logging.getLogger("symfonic.http")

SWEEP_INTERVAL = 5.0
# Under a second from a record's commit to its place in the audit chain, sealing included.
SEAL_INTERVAL = 0.5


async def sweep_periodically(
    host: ServiceHost,
    interval: float = SWEEP_INTERVAL,
    retention: Retention | None = None,
    expiring_lead: float | None = None,
    run_events_ttl: timedelta = RUN_EVENTS_TTL,
    runs: WorkerRuns | None = None,
) -> None:
    """Sweep now, then every ``interval`` seconds, until cancelled; with ``runs``,
    each pass also starts the queued messages of sessions whose hold lapsed."""
    while True:
        try:
            await _sweep_once(host, retention, expiring_lead)
            await host.prune_run_events(run_events_ttl)
            if runs is not None and (taken := await runs.take_free_queues()):
                logger.info("started %d queued messages whose session was free", taken)
        except Exception as error:
            logger.warning("the pause sweep failed; retrying in %gs: %s", interval, error)
        await anyio.sleep(interval)


async def seal_audit_periodically(host: ServiceHost, interval: float = SEAL_INTERVAL) -> None:
    """Give committed audit records their place in the chain every ``interval`` seconds;
    a failure is logged once until a seal succeeds, and the next pass picks the records up."""
    failing = False
    while True:
        try:
            await host.store.seal_audit()
            failing = False
        except Exception as error:
            if not failing:
                logger.warning(
                    "sealing the audit trail failed; retrying every %gs: %s", interval, error
                )
            failing = True
        await anyio.sleep(interval)


async def _sweep_once(
    host: ServiceHost, retention: Retention | None, expiring_lead: float | None
) -> None:
    report = await host.sweep(expiring_lead)
    if report.runs_ended:
        logger.info(
            "cleared %d run markers of turns that ended while the store could not write",
            report.runs_ended,
        )
    if report.expired or report.abandoned:
        logger.info(
            "swept %d expired pauses and %d lapsed claims", report.expired, report.abandoned
        )
    if retention is None:
        return
    pruned = await host.prune(retention)
    if pruned.sessions:
        logger.info(
            "pruned %d idle sessions (%d messages, %d pauses)",
            pruned.sessions,
            pruned.messages,
            pruned.pauses,
        )
