"""An embedded store's file: its path, WAL mode, schema revision, planner statistics and how far
each commit is synced.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from urllib.parse import parse_qs

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.storage.revision import READ_REVISION, found_of

logger = logging.getLogger(__name__)

# ``PRAGMA optimize`` reads at most this many rows an index for each ANALYZE it
# runs; 0x10002 asks SQLite (3.46 and later) to check every table, not only
# those this connection has queried.
ANALYSIS_LIMIT = 400
OPTIMIZE = "PRAGMA optimize=0x10002"


def use_wal(path: str, busy_timeout: float) -> None:
    """Switch the file to WAL, retrying while another opener holds it.

    A file without tables yet is made ``auto_vacuum=INCREMENTAL`` first, so
    that pages a prune frees can go back to the file system (a file made
    without it keeps them until ``symfonic vacuum`` rewrites it).
    """
    deadline = time.monotonic() + busy_timeout
    connection = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
        while True:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
    finally:
        connection.close()


def schema_revision(path: str, busy_timeout: float) -> tuple[str | None, str | None]:
    """The file's schema revision (``None`` if never migrated) and the oldest that can run
    beside it, if recorded."""
    connection = sqlite3.connect(path, timeout=busy_timeout)
    try:
        row = connection.execute(READ_REVISION).fetchone()
    except sqlite3.OperationalError as error:
        if "no such table" not in str(error):
            raise
        return None, None
    finally:
        connection.close()
    return found_of(row)


def path_of(url: str) -> str:
    """The file a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL names."""
    for prefix in ("sqlite+pysqlite:", "sqlite:"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            path = rest[3:] if rest.startswith("///") else ""
            path = path.partition("?")[0]
            if not path or path == ":memory:":
                # Every connection to an in-memory database is a database of its own.
                raise ConfigurationError(
                    f"a SQLite store needs a file, not {url!r}: use sqlite:///path.db"
                )
            return path
    raise ValueError(f"not a SQLite store URL: {url!r}")


def optimize(connection: sqlite3.Connection) -> None:
    """Gather the statistics SQLite finds missing or stale (a bounded ANALYZE).

    The indexes are chosen so that the planner picks them without statistics
    (tests/storage/test_query_plans.py); statistics keep its other estimates
    current as the tables grow. A lock held elsewhere for long skips it.
    """
    connection.execute(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
    try:
        connection.execute(OPTIMIZE)
    except sqlite3.OperationalError:
        logger.debug("SQLite's statistics could not be gathered now", exc_info=True)


# What ``?synchronous=`` may say, and the pragma each sets.
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}


def synchronous_of(url: str) -> str:
    """The ``PRAGMA synchronous`` the URL asks for: ``FULL`` unless ``?synchronous=normal``.

    NORMAL survives any process's crash, but a power cut may undo the commits since
    the last checkpoint (docs/storage.md), so it is the operator's choice, in the URL.
    """
    asked = parse_qs(url.partition("?")[2]).get("synchronous", ["full"])
    if len(asked) != 1 or asked[0].lower() not in SYNCHRONOUS:
        choices = " or ".join(f"synchronous={name}" for name in SYNCHRONOUS)
        said = ", ".join(f"synchronous={value}" for value in asked)
        raise ConfigurationError(f"a SQLite store URL may ask for {choices}, not {said}")
    return SYNCHRONOUS[asked[0].lower()]
