"""An audit record's place in the chain is given after its transaction commits.

A change's transaction now only inserts its records, unsealed: a negative
``sequence`` (PostgreSQL's from ``symfonic_audit_unsealed``, SQLite's one below
the lowest) and empty hashes, so no transaction locks the head row. The sealer
(``symfonic.storage.audit_log``) later numbers, links and hashes them under
the head's lock; the records and their hashes are as before, so older chains verify.
"""

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None
# Release 0023's workers run beside it: their records wait, unsealed, for a newer worker's sealer.
oldest_beside = "0023"

ENTRY = (
    "agent",
    "args_digest",
    "decision",
    "edited_args_digest",
    "event",
    "parent_session_id",
    "pause_id",
    "principal",
    "reason",
    "session_id",
    "from_audience",
    "to_audience",
)
_COLUMNS = f"sequence, at, prev_hash, hash, {', '.join(ENTRY)}"
_PG_STAMP = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
POSTGRES = (
    "CREATE SEQUENCE symfonic_audit_unsealed",
    "CREATE OR REPLACE FUNCTION symfonic_audit_chain(entries symfonic_audit_entry[])"
    " RETURNS void LANGUAGE sql AS $$"
    f" INSERT INTO symfonic_audit ({_COLUMNS})"
    f" SELECT -nextval('symfonic_audit_unsealed'), {_PG_STAMP}, '', '',"
    f" {', '.join(f'e.{f}' for f in ENTRY)}"
    " FROM unnest(entries) WITH ORDINALITY AS e ORDER BY e.ordinality $$",
)
_SQLITE_STAMP = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
SQLITE_APPEND = (
    "CREATE TRIGGER symfonic_audit_append INSTEAD OF INSERT ON symfonic_audit_intake BEGIN"
    f" INSERT INTO symfonic_audit ({_COLUMNS}) VALUES"
    " (min(coalesce((SELECT min(sequence) FROM symfonic_audit), 0), 0) - 1,"
    f" {_SQLITE_STAMP}, '', '', {', '.join(f'CAST(NEW.{f} AS TEXT)' for f in ENTRY)}); END"
)


def _chained_in_the_transaction() -> tuple[str, str]:
    """Migration 0020's statements, which chained each record in its transaction."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("0020_audit_readdressing.py")
    spec = importlib.util.spec_from_file_location("symfonic_migration_0020", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PG_CHAIN, module.SQLITE_APPEND


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRES:
            op.execute(statement)
        return
    op.execute("DROP TRIGGER symfonic_audit_append")
    op.execute(SQLITE_APPEND)


def downgrade() -> None:
    pg_chain, sqlite_append = _chained_in_the_transaction()
    if op.get_bind().dialect.name == "postgresql":
        op.execute(pg_chain)
        op.execute("DROP SEQUENCE symfonic_audit_unsealed")
        return
    op.execute("DROP TRIGGER symfonic_audit_append")
    op.execute(sqlite_append)
