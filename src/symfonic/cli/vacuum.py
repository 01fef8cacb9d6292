"""``symfonic vacuum``: give a store's free space back once, while the service is quiet (SQLite:
a rewrite with incremental auto-vacuum; PostgreSQL: ``VACUUM (ANALYZE)``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio

from symfonic.core.contracts.errors import ConfigurationError, StoreUnavailable
from symfonic.storage import masked_url, open_store, store_url
from symfonic.storage.vacuum import vacuum


def register(sub: Any) -> None:
    p = sub.add_parser(
        "vacuum",
        help="give a store's free space back (SQLite: rewrite the file once)",
        description="Give the space pruned sessions left back to the file system. On SQLite\n"
        "this rewrites the file, holding its write lock meanwhile: run it while the\n"
        "service is quiet. On PostgreSQL it runs VACUUM (ANALYZE) on the store's tables.",
    )
    p.add_argument("--store", help="store URL (default: SYMFONIC_STORE or sqlite:///symfonic.db)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    url = store_url(args.store)
    print(f"vacuuming {masked_url(url)}")
    try:
        report = anyio.run(_vacuum, url)
    except (ConfigurationError, StoreUnavailable) as error:
        print(f"symfonic vacuum: {error}", file=sys.stderr)
        return 2
    if report.before is not None and report.after is not None:
        print(f"{report.before:,} bytes before, {report.after:,} bytes after")
    else:
        print("done")
    return 0


async def _vacuum(url: str) -> Any:
    async with open_store(url):
        pass  # the schema is at head before the file is rewritten
    return await vacuum(url)
