"""The schema revision this version runs on, so opening a store already at it costs one query
and loads neither SQLAlchemy nor Alembic; and whether this worker may run on the schema it finds.
"""

from __future__ import annotations

import os
from typing import Any

from symfonic.core.contracts.errors import ConfigurationError

SCHEMA_HEAD = "0026"
# The oldest revision whose workers can run beside the store's schema, kept in
# symfonic_meta by each migration run, so a worker older than the schema can read it.
OLDEST_BESIDE = "schema_oldest_beside"
# Alembic's own bookkeeping table; missing in a database never migrated.
READ_REVISION = (
    "SELECT version_num, (SELECT value FROM symfonic_meta"
    f" WHERE key = '{OLDEST_BESIDE}') FROM alembic_version"
)
NO_MIGRATE = "SYMFONIC_NO_MIGRATE"


def found_of(row: Any) -> tuple[str | None, str | None]:
    """``READ_REVISION``'s row as the revision and the oldest beside it (kept as bytes)."""
    if row is None:
        return None, None
    return row[0], None if row[1] is None else bytes(row[1]).decode()


def must_migrate(url: str, found: str | None, oldest_beside: str | None) -> bool:
    """Whether this worker must migrate the schema ``found``, refusing in words where it may
    not (``SYMFONIC_NO_MIGRATE=1``) or where the schema is newer and cannot run beside it."""
    if found == SCHEMA_HEAD:
        return False
    from symfonic.storage import masked_url

    where = f"the store {masked_url(url)}"
    if found is not None and found > SCHEMA_HEAD:
        if oldest_beside and oldest_beside <= SCHEMA_HEAD:
            return False
        raise ConfigurationError(
            f"{where} is at schema {found}, newer than this symfonic's {SCHEMA_HEAD}, and "
            f"workers older than {oldest_beside or found} cannot run beside it: upgrade symfonic"
        )
    if os.environ.get(NO_MIGRATE) == "1":
        shown = "has no schema yet" if found is None else f"is at schema {found}"
        raise ConfigurationError(
            f"{where} {shown} and this symfonic runs schema {SCHEMA_HEAD}: run "
            "`symfonic migrate --store URL` first, or start without --no-migrate"
        )
    return True
