"""A seal is one row for its whole batch: records keep their unsealed number forever.

``symfonic_audit_seals`` holds, per seal, the place of its last record, the hash
before its first and each record's number and hash in chain order; the sealer no
longer rewrites each record. The head keeps ``sealed_below`` (every number below it
is new) and ``gaps``: on PostgreSQL, numbers a seal skipped while their transaction
may still commit, each with the snapshot's ``xmax`` after which it cannot.
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None
# Release 0023's workers run beside it (their records are the database's triggers'). No
# release ran 0024, whose sealer would renumber records a seal row already places.
oldest_beside = "0023"


def _previous() -> tuple[tuple[str, ...], str]:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("0024_audit_sealed_after_commit.py")
    spec = importlib.util.spec_from_file_location("symfonic_migration_0024", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.POSTGRES, module.SQLITE_APPEND


def upgrade() -> None:
    op.create_table(
        "symfonic_audit_seals",
        sa.Column("sequence", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("prev_hash", sa.Text, nullable=False),
        sa.Column("records", sa.Text, nullable=False),
        sa.Column("until", sa.Text, nullable=False),
    )
    with op.batch_alter_table("symfonic_audit_head") as head:
        head.add_column(
            sa.Column("sealed_below", sa.BigInteger, nullable=False, server_default="0")
        )
        head.add_column(sa.Column("gaps", sa.Text, nullable=False, server_default="{}"))
    postgres, sqlite_append = _previous()
    pg = op.get_bind().dialect.name == "postgresql"
    numbered = (
        "(SELECT CASE WHEN is_called THEN -last_value ELSE 0 END FROM symfonic_audit_unsealed)"
    )
    # Every number above the oldest unsealed record's (or all given, when none waits) is sealed.
    op.execute(
        "UPDATE symfonic_audit_head SET sealed_below = coalesce((SELECT max(sequence) + 1"
        f" FROM symfonic_audit WHERE sequence < 0), {numbered if pg else 0})"
    )
    if pg:
        # The transaction takes its id before its number, so a snapshot that shows the
        # id finished shows whether the number's record committed.
        op.execute(postgres[1].replace("$$ INSERT", "$$ SELECT pg_current_xact_id(); INSERT"))
        return
    op.execute("DROP TRIGGER symfonic_audit_append")
    # Below every number ever given, pruned ones included, so none is given twice.
    op.execute(
        sqlite_append.replace(
            "min(coalesce((SELECT min(sequence) FROM symfonic_audit), 0), 0)",
            "min(coalesce((SELECT min(sequence) FROM symfonic_audit), 0),"
            " (SELECT sealed_below FROM symfonic_audit_head WHERE id = 1), 0)",
        )
    )


def downgrade() -> None:
    """Each batch's records take their place, as the per-record sealer gave it."""
    bind = op.get_bind()
    seals = bind.execute(sa.text("SELECT sequence, prev_hash, records FROM symfonic_audit_seals"))
    update = sa.text(
        "UPDATE symfonic_audit SET sequence = :place, prev_hash = :prev, hash = :hash"
        " WHERE sequence = :number"
    )
    for last, prev, records in seals.fetchall():
        listed = json.loads(records)
        for offset, (number, hashed) in enumerate(listed):
            place = last - len(listed) + 1 + offset
            bind.execute(update, {"place": place, "prev": prev, "hash": hashed, "number": number})
            prev = hashed
    op.drop_table("symfonic_audit_seals")
    postgres, sqlite_append = _previous()
    if bind.dialect.name != "postgresql":
        op.execute("DROP TRIGGER symfonic_audit_append")  # it names the head, rebuilt here
    with op.batch_alter_table("symfonic_audit_head") as head:
        head.drop_column("gaps")
        head.drop_column("sealed_below")
    op.execute(postgres[1] if bind.dialect.name == "postgresql" else sqlite_append)
