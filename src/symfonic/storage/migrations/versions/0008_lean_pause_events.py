"""On SQLite, the record of pause changes writes one page a change, not three.

Every change of a pause writes its row in the change's own transaction. On
SQLite two more pages went with it: the ``at`` index's, and ``sqlite_sequence``'s
for ``AUTOINCREMENT``. SQLite needs neither:

- without ``AUTOINCREMENT`` a new row's id is the largest id plus one, so an
  id, a reader's position in the feed, is never handed out twice as long as the
  newest change is never deleted, and the trim always keeps it;
- the trim finds the old changes by walking the ids from the oldest up to the
  first change recorded at or after its cutoff (ids and times rise together),
  so it reads no index on ``at``.

PostgreSQL keeps its identity and its index: a replay there also reads the
changes recorded shortly before a position by ``at`` (see
:mod:`symfonic.storage.pause_changes`). On SQLite the table is rebuilt, so the
triggers that write into it (0004, 0007) and its own (0005) are dropped first
and made again from the SQL the database stored for them.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLE = "symfonic_pause_events"
AT_INDEX = "ix_symfonic_pause_events_at"


def _rebuild(*, lean: bool) -> None:
    """Rebuild the SQLite table: ``lean``, without ``AUTOINCREMENT`` and the ``at`` index."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    triggers = bind.execute(
        sa.text(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
            " AND tbl_name IN ('symfonic_pauses', :table)"
        ),
        {"table": TABLE},
    ).all()
    for name, _ in triggers:
        op.execute(f"DROP TRIGGER {name}")
    key = "INTEGER PRIMARY KEY" if lean else "INTEGER PRIMARY KEY AUTOINCREMENT"
    op.execute(
        f"CREATE TABLE {TABLE}_rebuilt (id {key}, pause_id VARCHAR(64) NOT NULL,"
        " session_id VARCHAR(64) NOT NULL, state VARCHAR(16) NOT NULL, at DATETIME NOT NULL)"
    )
    columns = "id, pause_id, session_id, state, at"
    op.execute(f"INSERT INTO {TABLE}_rebuilt ({columns}) SELECT {columns} FROM {TABLE}")
    op.execute(f"DROP TABLE {TABLE}")
    op.execute(f"ALTER TABLE {TABLE}_rebuilt RENAME TO {TABLE}")
    if not lean:
        op.create_index(AT_INDEX, TABLE, ["at"])
    for _, sql in triggers:
        op.execute(sql)


def upgrade() -> None:
    _rebuild(lean=True)


def downgrade() -> None:
    _rebuild(lean=False)
