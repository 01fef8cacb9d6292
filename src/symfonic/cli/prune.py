"""``symfonic prune --older-than 30d``: the sweeper's deletion of idle finished sessions, run by
hand, batch by batch; a session with a pause waiting or a turn running is never touched.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

import anyio

from symfonic.agent.retention import PRUNE_BATCH, Retention, parse_age, prune
from symfonic.cli.audit import stamp
from symfonic.core.contracts.errors import ConfigurationError, StoreUnavailable
from symfonic.core.contracts.store import PruneReport
from symfonic.storage import masked_url, open_store, store_url


def register(sub: Any) -> None:
    p = sub.add_parser(
        "prune",
        help="delete finished sessions idle for longer than an age",
        description="Delete finished sessions (no pause waiting or being answered, no turn\n"
        "running) idle for longer than --older-than, with their history and pauses.",
    )
    p.add_argument(
        "--older-than",
        required=True,
        metavar="AGE",
        help="idle for longer than this: a whole number and d, h or m (e.g. 30d)",
    )
    p.add_argument("--store", help="store URL (default: SYMFONIC_STORE or sqlite:///symfonic.db)")
    p.add_argument(
        "--keep-answered",
        action="store_true",
        help="keep the rows of answered pauses (who answered what, and when) as an audit",
    )
    p.add_argument(
        "--prune-audit",
        action="store_true",
        help="also delete audit records older than the age (kept unless this is given); "
        "the last one's hash stays as the chain's anchor, so `symfonic audit verify` still works",
    )
    p.add_argument(
        "--batch",
        type=int,
        default=PRUNE_BATCH,
        help=f"sessions deleted per transaction (default: {PRUNE_BATCH})",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        retention = Retention(parse_age(args.older_than), args.keep_answered, args.batch)
    except ConfigurationError as error:
        print(f"symfonic prune: {error}", file=sys.stderr)
        return 2
    url = store_url(args.store)
    print(f"pruning sessions idle for more than {args.older_than} from {masked_url(url)}")
    try:
        total = anyio.run(_prune, url, retention)
        if args.prune_audit:
            audited = anyio.run(_prune_audit, url, retention)
            print(f"deleted {audited} audit records")
    except (ConfigurationError, StoreUnavailable) as error:
        print(f"symfonic prune: {error}", file=sys.stderr)
        return 2
    kept = "; answered pauses kept as an audit" if retention.keep_answered else ""
    print(
        f"deleted {total.sessions} sessions ({total.messages} messages, "
        f"{total.pauses} pauses){kept}"
    )
    return 0


async def _prune_audit(url: str, retention: Retention) -> int:
    """Audit records are deleted only when asked, up to the same cutoff."""
    cutoff = datetime.now(UTC) - retention.older_than
    async with open_store(url) as store:
        return await store.prune_audit(stamp(cutoff.isoformat()))


async def _prune(url: str, retention: Retention) -> PruneReport:
    deleted = 0

    def progress(batch: PruneReport) -> None:
        nonlocal deleted
        deleted += batch.sessions
        print(f"  {deleted} sessions deleted so far", flush=True)

    async with open_store(url) as store:
        return await prune(store, retention, datetime.now(UTC), progress)
