"""How many pauses wait, per holder, agent and kind, kept by the database itself.

A listing's ``total`` counts the pending pauses of a principal's own range and
of each scope it holds; counting them row by row costs one index entry per
pause (12,500 for a scope holding one pause in eight at 100k pending).
``symfonic_pending_tally`` holds that count per range instead: one row per
``(addressed, holder, agent, kind)``, where ``holder`` is the pause's
``audience`` (``addressed``) or else its ``principal``, counting the pauses
that are ``pending`` and not a delegate's own (``parent_session_id IS NULL``),
the ones a listing shows.

Triggers on ``symfonic_pauses`` keep it, so the count moves in the same
transaction as the change by construction and no statement that creates,
moves or deletes a pause has to know about it: an insert adds one, a delete
takes one away, and an update of any column the key or the condition reads
takes the old row's one away and adds the new row's. A row whose count falls
to 0 stays, to be counted up again. The migration counts the pauses already
there. A later migration that rebuilds ``symfonic_pauses`` on SQLite
(``batch_alter_table``) drops these triggers with the old table and must
create them again.
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

TABLE = "symfonic_pending_tally"
KEY = ("addressed", "holder", "agent", "kind")
# The columns whose change can move a pause into, out of, or between tallies.
WATCHED = ("state", "principal", "audience", "agent", "kind", "parent_session_id")


def _counted(row: str) -> str:
    return f"{row}.state = 'pending' AND {row}.parent_session_id IS NULL"


def _key(row: str) -> str:
    holder = f"coalesce({row}.audience, {row}.principal)"
    return f"{row}.audience IS NOT NULL, {holder}, {row}.agent, {row}.kind"


def _matches(row: str) -> str:
    return (
        f"addressed = ({row}.audience IS NOT NULL)"
        f" AND holder = coalesce({row}.audience, {row}.principal)"
        f" AND agent = {row}.agent AND kind = {row}.kind"
    )


def _add(row: str, *, where: str) -> str:
    # ``WHERE`` before ``ON CONFLICT`` also keeps SQLite from reading ``ON`` as a join's.
    return (
        f"INSERT INTO {TABLE} ({', '.join(KEY)}, pending) SELECT {_key(row)}, 1 WHERE {where}"
        f" ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET pending = {TABLE}.pending + 1;"
    )


def _take(row: str, *, where: str) -> str:
    return f"UPDATE {TABLE} SET pending = pending - 1 WHERE {_matches(row)} AND {where};"


_CHANGED = " OR ".join(f"OLD.{column} IS NOT NEW.{column}" for column in WATCHED)

SQLITE_TRIGGERS = (
    f"CREATE TRIGGER symfonic_tally_created AFTER INSERT ON symfonic_pauses"
    f" WHEN {_counted('NEW')} BEGIN {_add('NEW', where='true')} END",
    f"CREATE TRIGGER symfonic_tally_changed AFTER UPDATE OF {', '.join(WATCHED)}"
    f" ON symfonic_pauses WHEN {_CHANGED} BEGIN"
    f" {_take('OLD', where=_counted('OLD'))} {_add('NEW', where=_counted('NEW'))} END",
    f"CREATE TRIGGER symfonic_tally_deleted AFTER DELETE ON symfonic_pauses"
    f" WHEN {_counted('OLD')} BEGIN {_take('OLD', where='true')} END",
)

POSTGRES_TRIGGERS = (
    "CREATE FUNCTION symfonic_tally_pending() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    f"  IF TG_OP <> 'INSERT' AND {_counted('OLD')} THEN {_take('OLD', where='true')} END IF;"
    f"  IF TG_OP <> 'DELETE' AND {_counted('NEW')} THEN {_add('NEW', where='true')} END IF;"
    "  RETURN NULL;"
    " END $$",
    "CREATE TRIGGER symfonic_tally_created AFTER INSERT ON symfonic_pauses"
    " FOR EACH ROW EXECUTE FUNCTION symfonic_tally_pending()",
    f"CREATE TRIGGER symfonic_tally_changed AFTER UPDATE OF {', '.join(WATCHED)}"
    " ON symfonic_pauses FOR EACH ROW WHEN ("
    + " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in WATCHED)
    + ") EXECUTE FUNCTION symfonic_tally_pending()",
    "CREATE TRIGGER symfonic_tally_deleted AFTER DELETE ON symfonic_pauses"
    " FOR EACH ROW EXECUTE FUNCTION symfonic_tally_pending()",
)

BACKFILL = (
    f"INSERT INTO {TABLE} ({', '.join(KEY)}, pending)"
    " SELECT audience IS NOT NULL, coalesce(audience, principal), agent, kind, COUNT(*)"
    " FROM symfonic_pauses WHERE state = 'pending' AND parent_session_id IS NULL"
    " GROUP BY audience IS NOT NULL, coalesce(audience, principal), agent, kind"
)


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("addressed", sa.Boolean, nullable=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("agent", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("pending", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint(*KEY, name="pk_symfonic_pending_tally"),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRES_TRIGGERS if postgres else SQLITE_TRIGGERS:
        op.execute(statement)
    op.execute(BACKFILL)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    on_pauses = " ON symfonic_pauses" if postgres else ""
    for trigger in ("symfonic_tally_created", "symfonic_tally_changed", "symfonic_tally_deleted"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}{on_pauses}")
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS symfonic_tally_pending()")
    op.drop_table(TABLE)
