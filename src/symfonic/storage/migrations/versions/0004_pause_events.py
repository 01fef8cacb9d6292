"""Every change of a pause's state is recorded by the database itself, as an event.

``symfonic_pause_events`` holds one row per pause created and per change of its
``state``; its increasing ``id`` is the live feed's position. Triggers on
``symfonic_pauses`` write the row, so the event is in the same transaction as
the change by construction: a change that rolls back leaves no event, and no
statement that moves a pause has to know about the feed. On PostgreSQL the
trigger also sends ``pg_notify`` with the event's id, which the server delivers
only on commit, in commit order, to every worker that listens.

The ids come from AUTOINCREMENT on SQLite and an identity on PostgreSQL, so an
id is never reused after retention deletes rows. The two dialects' DDL sit side
by side below. A later migration that rebuilds ``symfonic_pauses`` on SQLite
(``batch_alter_table``) drops these triggers with the old table and must
create them again.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

CHANNEL = "symfonic_pause_changes"

_SQLITE_ROW = (
    "INSERT INTO symfonic_pause_events (pause_id, session_id, state, at)"
    " VALUES (NEW.pause_id, NEW.session_id, NEW.state,"
    # The text every other timestamp is stored as: YYYY-MM-DD HH:MM:SS.ffffff, UTC.
    " strftime('%Y-%m-%d %H:%M:%f', 'now') || '000');"
)
SQLITE_TRIGGERS = (
    "CREATE TRIGGER symfonic_pause_created AFTER INSERT ON symfonic_pauses"
    f" BEGIN {_SQLITE_ROW} END",
    "CREATE TRIGGER symfonic_pause_changed AFTER UPDATE OF state ON symfonic_pauses"
    f" WHEN OLD.state IS NOT NEW.state BEGIN {_SQLITE_ROW} END",
)

POSTGRES_TRIGGERS = (
    "CREATE FUNCTION symfonic_record_pause_change() RETURNS trigger LANGUAGE plpgsql AS $$"
    " DECLARE change_id bigint;"
    " BEGIN"
    "  INSERT INTO symfonic_pause_events (pause_id, session_id, state, at)"
    "  VALUES (NEW.pause_id, NEW.session_id, NEW.state, clock_timestamp())"
    "  RETURNING id INTO change_id;"
    f"  PERFORM pg_notify('{CHANNEL}', CAST(change_id AS text));"
    "  RETURN NULL;"
    " END $$",
    "CREATE TRIGGER symfonic_pause_created AFTER INSERT ON symfonic_pauses"
    " FOR EACH ROW EXECUTE FUNCTION symfonic_record_pause_change()",
    "CREATE TRIGGER symfonic_pause_changed AFTER UPDATE OF state ON symfonic_pauses"
    " FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)"
    " EXECUTE FUNCTION symfonic_record_pause_change()",
)


def upgrade() -> None:
    op.create_table(
        "symfonic_pause_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            sa.Identity(always=False),
            primary_key=True,
        ),
        sa.Column("pause_id", sa.String(64), nullable=False, index=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
        sqlite_autoincrement=True,
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRES_TRIGGERS if postgres else SQLITE_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    on_pauses = " ON symfonic_pauses" if postgres else ""
    for trigger in ("symfonic_pause_changed", "symfonic_pause_created"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}{on_pauses}")
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS symfonic_record_pause_change()")
    op.drop_table("symfonic_pause_events")
