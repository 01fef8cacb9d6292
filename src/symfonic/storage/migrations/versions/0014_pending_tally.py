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
takes the old row's one away and adds the new row's. On SQLite, which runs
one writer at a time, these are row triggers; on PostgreSQL, statement
triggers that apply each statement's net change per key in key order (see
``_postgres_counts``). A row whose count falls to 0 stays, to be counted up
again. The migration counts the pauses already there.

On PostgreSQL a transaction that creates or claims a pause holds its tally
row's lock until it commits, so concurrent writes for one holder, agent and
kind commit one after the other; docs/scale.md has what that costs.

A later migration that rebuilds ``symfonic_pauses`` on SQLite
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


def _postgres_counts(*sides: tuple[str, int]) -> str:
    """One upsert of each key's net change over a statement's transition tables.

    The keys come sorted, so every statement takes its tally rows' locks in one
    order: two sweeps on two workers, each moving many pauses of the same
    holders, wait for each other rather than deadlock.
    """
    key = "audience IS NOT NULL, coalesce(audience, principal), agent, kind"
    changes = " UNION ALL ".join(
        f"SELECT {key}, {sign} FROM {rows} WHERE {_counted(rows)}" for rows, sign in sides
    )
    columns = ", ".join(KEY)
    return (
        f"INSERT INTO {TABLE} ({columns}, pending) SELECT {columns}, SUM(change)"
        f" FROM ({changes}) AS changes ({columns}, change)"
        f" GROUP BY {columns} HAVING SUM(change) <> 0 ORDER BY {columns}"
        f" ON CONFLICT ({columns}) DO UPDATE SET pending = {TABLE}.pending + EXCLUDED.pending"
    )


def _postgres_trigger(name: str, event: str, tables: str, *sides: tuple[str, int]) -> list[str]:
    # Statement triggers with transition tables: one upsert per statement, however many
    # pauses it moves (a sweep's batch, a bulk load). PostgreSQL allows no column list
    # on them, so every update of the pauses runs the function; an update that moves
    # no pause into or out of a tally changes no row.
    return [
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$"
        f" BEGIN {_postgres_counts(*sides)}; RETURN NULL; END $$",
        f"CREATE TRIGGER {name} AFTER {event} ON symfonic_pauses REFERENCING {tables}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
    ]


POSTGRES_TRIGGERS = (
    *_postgres_trigger("symfonic_tally_created", "INSERT", "NEW TABLE AS added", ("added", 1)),
    *_postgres_trigger(
        "symfonic_tally_changed",
        "UPDATE",
        "OLD TABLE AS before_rows NEW TABLE AS after_rows",
        ("before_rows", -1),
        ("after_rows", 1),
    ),
    *_postgres_trigger("symfonic_tally_deleted", "DELETE", "OLD TABLE AS removed", ("removed", -1)),
)
TRIGGER_NAMES = ("symfonic_tally_created", "symfonic_tally_changed", "symfonic_tally_deleted")

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
    for trigger in TRIGGER_NAMES:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}{on_pauses}")
        if postgres:
            op.execute(f"DROP FUNCTION IF EXISTS {trigger}()")
    op.drop_table(TABLE)
