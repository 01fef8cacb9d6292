"""The schema revision this version runs on, so opening a store already at it costs one query
and loads neither SQLAlchemy nor Alembic. A test pins it to the migrations' head.
"""

from __future__ import annotations

SCHEMA_HEAD = "0024"
# Alembic's own bookkeeping table; missing in a database never migrated.
READ_REVISION = "SELECT version_num FROM alembic_version"
