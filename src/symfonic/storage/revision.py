"""The schema revision this version of symfonic runs on.

The newest migration's id, written here so that opening a store that is already
at it costs one query and loads neither SQLAlchemy nor Alembic: they are needed
only to change a schema, and they are a third of the objects a worker would
otherwise keep in memory (which every garbage collection walks). A test pins it
to the migrations' head.
"""

from __future__ import annotations

SCHEMA_HEAD = "0023"
# Alembic's own bookkeeping table; missing in a database never migrated.
READ_REVISION = "SELECT version_num FROM alembic_version"
