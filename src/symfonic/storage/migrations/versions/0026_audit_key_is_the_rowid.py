"""On SQLite an audit record's and a seal's number is the table's own key (its rowid).

``sequence BIGINT PRIMARY KEY`` kept a second b-tree beside each table, so every
transaction that audited wrote one more 4 KiB page; ``INTEGER PRIMARY KEY`` is the
rowid itself. Each table is copied once, its rows and columns unchanged. PostgreSQL
has no rowid and keeps its tables.
"""

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None
oldest_beside = "0023"

_AUDIT = (
    "agent", "args_digest", "at", "decision", "edited_args_digest", "event",
    "parent_session_id", "pause_id", "prev_hash", "principal", "reason", "sequence",
    "session_id", "hash", "from_audience", "to_audience",
)  # fmt: skip
_NOT_NULL = {"at", "event", "prev_hash", "hash"}
TABLES = {
    "symfonic_audit": ", ".join(
        "sequence INTEGER PRIMARY KEY"
        if c == "sequence"
        else f"{c} TEXT{' NOT NULL' if c in _NOT_NULL else ''}"
        for c in _AUDIT
    ),
    "symfonic_audit_seals": "sequence INTEGER PRIMARY KEY, prev_hash TEXT NOT NULL,"
    " records TEXT NOT NULL, until TEXT NOT NULL",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # The view and the triggers that name the table keep naming it: nothing is rewritten.
    op.execute("PRAGMA legacy_alter_table = ON")
    for table, columns in TABLES.items():
        names = ", ".join(c.split()[0] for c in columns.split(", "))
        op.execute(f"CREATE TABLE {table}_keyed ({columns})")
        op.execute(f"INSERT INTO {table}_keyed ({names}) SELECT {names} FROM {table}")
        op.execute(f"DROP TABLE {table}")
        op.execute(f"ALTER TABLE {table}_keyed RENAME TO {table}")
    op.execute("PRAGMA legacy_alter_table = OFF")


def downgrade() -> None:
    """Nothing to undo: every statement of the revisions before reads a rowid key alike."""
