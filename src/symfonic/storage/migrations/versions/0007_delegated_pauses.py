"""Pauses of delegated agents: marked, linked to their parent's, and kept out of sight.

A delegate agent's pause is recorded in its own session and answered only
through the parent's pause that stands for it. ``parent_session_id`` marks the
delegate's pause (the session whose pause stands for it), ``delegated_pause_id``
the parent's pause (the delegate's pause it stands for), and ``sub_agent`` names
the delegate on the parent's pause, so a person sees which agent asks.

On SQLite the columns are added with plain ``ADD COLUMN``: a batch alter would
rebuild ``symfonic_pauses`` and drop the triggers of migration 0004 with it.
Those triggers are then made again, on both dialects, to skip a delegate's
pause: the person sees, and a webhook announces, only the parent's pause, so
a delegate's pause writes no change to the feed, and hence owes no webhook.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_COLUMNS = ("parent_session_id", "delegated_pause_id", "sub_agent")

_SQLITE_ROW = (
    "INSERT INTO symfonic_pause_events (pause_id, session_id, state, at)"
    " VALUES (NEW.pause_id, NEW.session_id, NEW.state,"
    " strftime('%Y-%m-%d %H:%M:%f', 'now') || '000');"
)


def _sqlite_triggers(only_own: bool) -> tuple[str, ...]:
    own = " WHEN NEW.parent_session_id IS NULL" if only_own else ""
    changed = " AND NEW.parent_session_id IS NULL" if only_own else ""
    return (
        "CREATE TRIGGER symfonic_pause_created AFTER INSERT ON symfonic_pauses"
        f"{own} BEGIN {_SQLITE_ROW} END",
        "CREATE TRIGGER symfonic_pause_changed AFTER UPDATE OF state ON symfonic_pauses"
        f" WHEN OLD.state IS NOT NEW.state{changed} BEGIN {_SQLITE_ROW} END",
    )


def _postgres_function(only_own: bool) -> str:
    skip = " IF NEW.parent_session_id IS NOT NULL THEN RETURN NULL; END IF;" if only_own else ""
    return (
        "CREATE OR REPLACE FUNCTION symfonic_record_pause_change() RETURNS trigger"
        " LANGUAGE plpgsql AS $$"
        " DECLARE change_id bigint;"
        f" BEGIN{skip}"
        "  INSERT INTO symfonic_pause_events (pause_id, session_id, state, at)"
        "  VALUES (NEW.pause_id, NEW.session_id, NEW.state, clock_timestamp())"
        "  RETURNING id INTO change_id;"
        "  PERFORM pg_notify('symfonic_pause_changes', CAST(change_id AS text));"
        "  RETURN NULL;"
        " END $$"
    )


def _triggers(only_own: bool) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_postgres_function(only_own))
        return
    for trigger in ("symfonic_pause_changed", "symfonic_pause_created"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for statement in _sqlite_triggers(only_own):
        op.execute(statement)


def upgrade() -> None:
    for column in _COLUMNS:
        op.add_column("symfonic_pauses", sa.Column(column, sa.String(200), nullable=True))
    _triggers(only_own=True)


def downgrade() -> None:
    _triggers(only_own=False)
    if op.get_bind().dialect.name == "postgresql":
        for column in _COLUMNS:
            op.drop_column("symfonic_pauses", column)
    # SQLite keeps the columns: dropping them would rebuild the table and its triggers.
