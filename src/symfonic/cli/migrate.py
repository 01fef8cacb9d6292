"""``symfonic migrate``: bring a store to this version's schema as a step of its own, and say
what changed, so workers can start with ``serve --no-migrate``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

from symfonic.core.contracts.errors import ConfigurationError, StoreUnavailable
from symfonic.storage import masked_url, open_store, store_url
from symfonic.storage.revision import NO_MIGRATE, SCHEMA_HEAD


def register(sub: Any) -> None:
    p = sub.add_parser(
        "migrate",
        help="bring a store to this version's schema, before its workers start",
        description="Apply the schema migrations this version of symfonic has and the store\n"
        "lacks, once, however many run at the same moment. Workers of the previous release\n"
        "may keep serving meanwhile: every migration of a release only adds.",
    )
    p.add_argument("--store", help="store URL (default: SYMFONIC_STORE or sqlite:///symfonic.db)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    url = store_url(args.store)
    os.environ.pop(NO_MIGRATE, None)  # migrating is what was asked
    try:
        found = anyio.run(_migrate, url)
    except (ConfigurationError, StoreUnavailable) as error:
        print(f"symfonic migrate: {error}", file=sys.stderr)
        return 2
    print(f"symfonic migrate: {masked_url(url)} {said(found)}")
    return 0


def said(found: str | None) -> str:
    """What migrating a store found at schema ``found`` did, in words."""
    if found is None:
        return f"had no schema; created schema {SCHEMA_HEAD}"
    if found == SCHEMA_HEAD:
        return f"is already at the newest schema ({SCHEMA_HEAD}); nothing to do"
    if found > SCHEMA_HEAD:
        return f"is at schema {found}, newer than this symfonic's {SCHEMA_HEAD}; nothing to do"
    from symfonic.storage.migrate import oldest_beside

    floor = oldest_beside()
    beside = f"workers of schema {floor} and later" if floor else "no older workers"
    return f"migrated from schema {found} to {SCHEMA_HEAD}; {beside} can run beside it"


async def _migrate(url: str) -> str | None:
    async with open_store(url) as store:
        found: str | None = getattr(store, "schema_found", None)
    return found
