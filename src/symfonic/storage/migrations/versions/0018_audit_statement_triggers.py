"""On PostgreSQL the audit trail chains each statement's records at once.

Migration 0015's row triggers moved the chain's one head row twice per record.
In a transaction that moves many pauses (a sweep's batch, a bulk load) every
move made a new version of that row, and PostgreSQL walks the versions its own
transaction made to reach the newest: the cost grew with the square of the
records. Here the triggers on ``symfonic_pauses`` are statement triggers over
transition tables, as the pending tally's are (migration 0014), and hand the
statement's records, in the order the pauses were asked (``created_at``, then
``pause_id``), to ``symfonic_audit_chain``. That function locks the head row
(``SELECT … FOR UPDATE``, held to commit: a second writer waits, then reads
what the first committed, so the chain cannot fork), numbers, stamps and
hashes the records one after the other, and moves the head once. The intake
view's trigger hands it one record. A statement that audits nothing (a lease
renewed, a checkpoint dropped) never touches the head.

The records are the same as before, field for field and hash for hash: a chain
written across the upgrade verifies as one.

SQLite keeps its row triggers: it updates the head row in place, with no
versions to walk, so a record costs the same however many its transaction made.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# The record's fields in the order RFC 8785 sorts their names, ``hash`` apart.
FIELDS = (
    "agent",
    "args_digest",
    "at",
    "decision",
    "edited_args_digest",
    "event",
    "parent_session_id",
    "pause_id",
    "prev_hash",
    "principal",
    "reason",
    "sequence",
    "session_id",
)
# What a trigger hands the chain; the rest is the chain's.
ENTRY = tuple(f for f in FIELDS if f not in ("at", "prev_hash", "sequence"))

_ANSWERED = "('claimed', 'published', 'superseded')"


def _changed(n: str, o: str) -> dict[str, str]:
    """A state change's entry, from the rows after (``n``) and before (``o``)."""
    claimed_approval = f"{n}.state = 'claimed' AND {n}.kind = 'approval'"
    return {
        "event": f"CASE {n}.state WHEN 'claimed' THEN 'answered' ELSE {n}.state END",
        "principal": (
            f"CASE WHEN {n}.state IN {_ANSWERED} THEN {n}.answered_by"
            f" WHEN {n}.state = 'abandoned' AND {o}.state = 'pending' THEN {n}.principal"
            f" WHEN {n}.state = 'abandoned' THEN {n}.answered_by END"
        ),
        "decision": (
            f"CASE WHEN {n}.state <> 'claimed' THEN NULL"
            f" WHEN {n}.answer_status = 'cancelled' THEN 'cancelled'"
            f" WHEN {n}.kind = 'approval' THEN {n}.answer ->> 'decision' ELSE 'answered' END"
        ),
        "reason": (
            f"CASE WHEN {claimed_approval} THEN {n}.answer ->> 'reason'"
            f" WHEN {n}.state = 'abandoned' AND {o}.state = 'claimed'"
            " THEN 'the turn that answered it failed or its claim lapsed'"
            f" WHEN {n}.state = 'abandoned' THEN 'a new turn in its session abandoned it'"
            f" WHEN {n}.state = 'expired' THEN 'nobody answered before it expired' END"
        ),
    }


_ASKED = {"event": "'asked'", "decision": "NULL", "reason": "NULL"}


def _entry(values: dict[str, str], row: str) -> str:
    """One entry, each field from ``values`` or else the pause ``row``'s own column."""
    given = ", ".join(f"CAST({values.get(f, f'{row}.{f}')} AS text)" for f in ENTRY)
    return f"ROW({given})::symfonic_audit_entry"


def _pg_json(field: str) -> str:
    if field == "sequence":
        return "CAST(chained.sequence AS text)"
    return f"coalesce(CAST(to_json(chained.{field}) AS text), 'null')"


_CANONICAL = " || ',' || ".join(f"'\"{f}\":' || {_pg_json(f)}" for f in FIELDS)
_STAMP = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
CHAIN = (
    "CREATE FUNCTION symfonic_audit_chain(entries symfonic_audit_entry[])"
    " RETURNS void LANGUAGE plpgsql AS $$"
    " DECLARE chained symfonic_audit%ROWTYPE; entry symfonic_audit_entry;"
    " BEGIN"
    "  IF coalesce(cardinality(entries), 0) = 0 THEN RETURN; END IF;"
    # Held to commit: the next writer waits here, then reads the head this one moved.
    "  SELECT sequence, hash INTO chained.sequence, chained.prev_hash"
    "  FROM symfonic_audit_head WHERE id = 1 FOR UPDATE;"
    "  FOREACH entry IN ARRAY entries LOOP"
    "   chained.sequence := chained.sequence + 1;"
    f"   chained.at := {_STAMP};"
    + "".join(f"   chained.{f} := entry.{f};" for f in ENTRY)
    + f"   chained.hash := encode(sha256(convert_to('{{' || {_CANONICAL} || '}}',"
    " 'UTF8')), 'hex');"
    "   INSERT INTO symfonic_audit SELECT chained.*;"
    "   chained.prev_hash := chained.hash;"
    "  END LOOP;"
    "  UPDATE symfonic_audit_head SET sequence = chained.sequence,"
    "  hash = chained.prev_hash WHERE id = 1;"
    " END $$"
)


def _statement_trigger(name: str, event: str, tables: str, entries: str) -> list[str]:
    return [
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$"
        f" BEGIN PERFORM symfonic_audit_chain(ARRAY({entries})); RETURN NULL; END $$",
        f"CREATE TRIGGER {name} AFTER {event} ON symfonic_pauses REFERENCING {tables}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
    ]


_IN_ORDER = "ORDER BY n.created_at, n.pause_id"
POSTGRES = (
    "CREATE TYPE symfonic_audit_entry AS (" + ", ".join(f"{f} text" for f in ENTRY) + ")",
    CHAIN,
    "CREATE OR REPLACE FUNCTION symfonic_audit_append() RETURNS trigger LANGUAGE plpgsql AS $$"
    f" BEGIN PERFORM symfonic_audit_chain(ARRAY[{_entry({}, 'NEW')}]); RETURN NEW; END $$",
    *_statement_trigger(
        "symfonic_audit_asked",
        "INSERT",
        "NEW TABLE AS added",
        f"SELECT {_entry(_ASKED, 'n')} FROM added n {_IN_ORDER}",
    ),
    # No column list or WHEN on a statement trigger: every update runs it, and one
    # that moves no pause's state hands the chain nothing.
    *_statement_trigger(
        "symfonic_audit_changed",
        "UPDATE",
        "OLD TABLE AS before_rows NEW TABLE AS after_rows",
        f"SELECT {_entry(_changed('n', 'o'), 'n')} FROM before_rows o"
        " JOIN after_rows n ON n.pause_id = o.pause_id"
        f" WHERE n.state IS DISTINCT FROM o.state {_IN_ORDER}",
    ),
)
PAUSE_TRIGGERS = ("symfonic_audit_asked", "symfonic_audit_changed")


def _trail() -> ModuleType:
    """Migration 0015, whose row triggers a downgrade puts back."""
    path = Path(__file__).with_name("0015_audit_trail.py")
    spec = importlib.util.spec_from_file_location("symfonic_audit_trail_0015", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _drop_all() -> None:
    for trigger in PAUSE_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON symfonic_pauses")
        op.execute(f"DROP FUNCTION IF EXISTS {trigger}()")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _drop_all()
    for statement in POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _drop_all()
    op.execute("DROP TRIGGER symfonic_audit_append ON symfonic_audit_intake")
    op.execute("DROP FUNCTION symfonic_audit_append()")
    op.execute("DROP FUNCTION symfonic_audit_chain(symfonic_audit_entry[])")
    op.execute("DROP TYPE symfonic_audit_entry")
    for statement in _trail().POSTGRES:
        op.execute(statement)
