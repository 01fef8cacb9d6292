"""`symfonic audit`: verify the audit trail's hash chain (exit 1 when broken), or export it.

An export's line without its `hash` is exactly what was hashed, so anyone can recompute the chain.
A store that is not there is refused, never created: a typo must not read as verified.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

import anyio

from symfonic.core.contracts.audit import AuditAnchor, ChainBreak, verify_log
from symfonic.core.contracts.errors import ConfigurationError, StoreUnavailable
from symfonic.storage import masked_url, open_store, store_url
from symfonic.storage.sqlite_file import path_of

PAGE = 1000


def register(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="verify the audit trail's hash chain, or export its records",
        description="Verify the audit trail's hash chain, or export its records as JSON lines.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    verify = actions.add_parser("verify", help="recompute the chain; exit 1 if it was broken")
    export = actions.add_parser("export", help="write the records as JSON lines")
    export.add_argument(
        "--since", metavar="TIME", help="only records at or after this ISO 8601 time (UTC)"
    )
    export.add_argument("--format", choices=("jsonl",), default="jsonl")
    for action in (verify, export):
        action.add_argument(
            "--store", help="store URL (default: SYMFONIC_STORE or sqlite:///symfonic.db)"
        )
    verify.set_defaults(run=run_verify)
    export.set_defaults(run=run_export)


def existing_store(given: str | None) -> str:
    """The store URL; `ConfigurationError` when it names a SQLite file that is not there."""
    url = store_url(given)
    if url.startswith("sqlite") and not os.path.exists(path_of(url)):
        raise ConfigurationError(
            f"there is no store at {masked_url(url)}; check --store or SYMFONIC_STORE "
            "(nothing was created)"
        )
    return url


def run_verify(args: argparse.Namespace) -> int:
    try:
        url = existing_store(args.store)
        checked, broken, anchor = anyio.run(_verify, url)
    except (ConfigurationError, StoreUnavailable) as error:
        print(f"symfonic audit: {error}", file=sys.stderr)
        return 2
    if broken is not None:
        print(f"the audit trail of {masked_url(url)} is broken: {broken.message}")
        return 1
    print(f"the audit trail of {masked_url(url)} holds: {checked} records verified")
    if anchor.unsealed:
        waited = anchor.unsealed_seconds(datetime.now(UTC))
        print(
            f"not yet sealed into the chain: {anchor.unsealed}, the oldest committed"
            f" {waited:.1f} s ago (a running worker seals them within a second)"
        )
    return 0


async def _verify(url: str) -> tuple[int, ChainBreak | None, AuditAnchor]:
    async with open_store(url) as store:
        checked, broken = await verify_log(store, PAGE)
        return checked, broken, await store.audit_anchor()


def run_export(args: argparse.Namespace) -> int:
    try:
        since = None if args.since is None else stamp(args.since)
    except ValueError:
        print(f"symfonic audit: --since {args.since!r} is not an ISO 8601 time", file=sys.stderr)
        return 2
    try:
        anyio.run(_export, existing_store(args.store), since, sys.stdout)
    except (ConfigurationError, StoreUnavailable) as error:
        print(f"symfonic audit: {error}", file=sys.stderr)
        return 2
    return 0


def stamp(text: str) -> str:
    """An ISO 8601 time as the records' own stamps are written: UTC, to the millisecond."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


async def _export(url: str, since: str | None, out: TextIO) -> None:
    async with open_store(url) as store:
        after = 0
        while True:
            batch = await store.audit_records(after=after, limit=PAGE, since=since)
            for record in batch:
                out.write(json.dumps(record.exported(), ensure_ascii=False) + "\n")
            if len(batch) < PAGE:
                return
            after = batch[-1].sequence
