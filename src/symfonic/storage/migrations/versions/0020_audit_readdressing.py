"""Every escalation step and reassignment of a pause is one audit record.

A re-addressing changes who may answer a pending pause, not its state, so the
triggers of migrations 0015 and 0018 never saw it. It always writes the pause's
``readdressed`` (kind, previous audience, new audience, operator, reason, time)
in the same ``UPDATE`` as the audience, so a change of ``readdressed`` while the
state stays is the trigger's cue: the record is written in the re-addressing's
own transaction, by the statement trigger on PostgreSQL and a row trigger on
SQLite. Its ``event`` is ``escalated`` or ``reassigned``, ``principal`` the
operator (none for a step of the chain), ``reason`` the operator's words or, for
a step, how long nobody answered, and two new fields say who it went from and
to: ``from_audience`` (``principal:NAME`` when it was its owner's alone) and
``to_audience``.

The two new fields are hashed only where they are set: a record without them
hashes exactly as before, so chains written earlier verify unchanged. The
intake view gains them, for code that audits a change of its own.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

OPTIONAL = ("from_audience", "to_audience")
# The record's fields in the order RFC 8785 sorts their names, ``hash`` apart.
FIELDS = (
    "agent",
    "args_digest",
    "at",
    "decision",
    "edited_args_digest",
    "event",
    "from_audience",
    "parent_session_id",
    "pause_id",
    "prev_hash",
    "principal",
    "reason",
    "sequence",
    "session_id",
    "to_audience",
)
OLD_ENTRY = (
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
)
ENTRY = (*OLD_ENTRY, *OPTIONAL)


def _version(name: str) -> ModuleType:
    """An earlier migration's module, whose statements a downgrade puts back."""
    path = Path(__file__).with_name(name)
    spec = importlib.util.spec_from_file_location(f"symfonic_migration_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _readdressed(n: str, o: str, kind: str, field: str) -> dict[str, str]:
    """A re-addressing's entry, from the rows after (``n``) and before (``o``);
    ``kind`` and ``field`` read ``readdressed``'s kind and another of its fields."""
    return {
        "event": kind,
        "principal": field.format("by"),
        "decision": "NULL",
        "edited_args_digest": "NULL",
        "reason": (
            f"CASE {kind} WHEN 'escalated' THEN 'nobody answered within '"
            f" || CAST(round(CAST({field.format('after')} AS numeric)) AS bigint) || ' s'"
            f" ELSE {field.format('reason')} END"
        ),
        "from_audience": f"coalesce({o}.audience, 'principal:' || {o}.principal)",
        "to_audience": f"{n}.audience",
    }


# PostgreSQL.


def _pg_json(field: str) -> str:
    if field == "sequence":
        return "CAST(chained.sequence AS text)"
    return f"coalesce(CAST(to_json(chained.{field}) AS text), 'null')"


def _pg_member(index: int, field: str) -> str:
    member = f"'{',' if index else ''}\"{field}\":' || {_pg_json(field)}"
    if field in OPTIONAL:  # hashed only where set: older records hash as they did
        return f"(CASE WHEN chained.{field} IS NULL THEN '' ELSE {member} END)"
    return member


_CANONICAL = " || ".join(_pg_member(i, f) for i, f in enumerate(FIELDS))
_STAMP = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
PG_CHAIN = (
    "CREATE OR REPLACE FUNCTION symfonic_audit_chain(entries symfonic_audit_entry[])"
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


def _pg_entry(values: dict[str, str], row: str) -> str:
    given = ", ".join(f"CAST({values.get(f, f'{row}.{f}')} AS text)" for f in ENTRY)
    return f"ROW({given})::symfonic_audit_entry"


def _function(name: str, entries: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$"
        f" BEGIN PERFORM symfonic_audit_chain(ARRAY({entries})); RETURN NULL; END $$"
    )


def _postgres() -> tuple[str, ...]:
    trail = _version("0018_audit_statement_triggers.py")
    nothing_new = {f: "NULL" for f in OPTIONAL}
    joined = "FROM before_rows o JOIN after_rows n ON n.pause_id = o.pause_id"
    changed = _pg_entry({**trail._changed("n", "o"), **nothing_new}, "n")
    moved = _readdressed("n", "o", "n.readdressed ->> 'kind'", "n.readdressed ->> '{}'")
    readdressed = "CAST(n.readdressed AS text)"
    audited = (
        f"SELECT n.created_at, n.pause_id, 0 AS step, {changed} AS entry {joined}"
        " WHERE n.state IS DISTINCT FROM o.state UNION ALL"
        f" SELECT n.created_at, n.pause_id, 1, {_pg_entry(moved, 'n')} {joined}"
        f" WHERE n.state = o.state AND {readdressed} IS DISTINCT FROM CAST(o.readdressed AS text)"
        f" AND {readdressed} IS NOT NULL"
    )
    asked = _pg_entry({**trail._ASKED, **nothing_new}, "n")
    return (
        "ALTER TABLE symfonic_audit ADD COLUMN from_audience text, ADD COLUMN to_audience text",
        f"CREATE OR REPLACE VIEW symfonic_audit_intake AS SELECT {', '.join(ENTRY)}"
        " FROM symfonic_audit",
        "ALTER TYPE symfonic_audit_entry ADD ATTRIBUTE from_audience text,"
        " ADD ATTRIBUTE to_audience text",
        PG_CHAIN,
        "CREATE OR REPLACE FUNCTION symfonic_audit_append() RETURNS trigger LANGUAGE plpgsql AS $$"
        f" BEGIN PERFORM symfonic_audit_chain(ARRAY[{_pg_entry({}, 'NEW')}]); RETURN NEW; END $$",
        _function("symfonic_audit_asked", f"SELECT {asked} FROM added n {trail._IN_ORDER}"),
        # A re-addressing changes ``readdressed`` and never the state; a state change
        # that also moved it would be audited as the state change.
        _function(
            "symfonic_audit_changed",
            f"SELECT entry FROM ({audited}) AS audited ORDER BY created_at, pause_id, step",
        ),
    )


# SQLite.


_SQLITE_STAMP = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_SQLITE_RECORD = ", ".join(f"'{f}', r.{f}" for f in FIELDS)
# The intake's trigger as migration 0015 made it, with the new fields; the hash
# function each connection registers leaves them out where they are null.
SQLITE_APPEND = (
    "CREATE TRIGGER symfonic_audit_append INSTEAD OF INSERT ON symfonic_audit_intake BEGIN"
    " UPDATE symfonic_audit_head SET sequence = sequence + 1 WHERE id = 1;"
    f" INSERT INTO symfonic_audit ({', '.join(FIELDS)}, hash)"
    f" SELECT {', '.join(f'r.{f}' for f in FIELDS)},"
    f" symfonic_audit_hash(json_object({_SQLITE_RECORD}))"
    f" FROM (SELECT h.sequence AS sequence, {_SQLITE_STAMP} AS at, h.hash AS prev_hash,"
    f" {', '.join(f'CAST(NEW.{f} AS TEXT) AS {f}' for f in ENTRY)}"
    " FROM symfonic_audit_head h WHERE h.id = 1) r;"
    " UPDATE symfonic_audit_head SET hash = (SELECT a.hash FROM symfonic_audit a"
    " WHERE a.sequence = symfonic_audit_head.sequence) WHERE id = 1;"
    " END"
)


def _sqlite_readdressed() -> str:
    moved = _readdressed(
        "NEW",
        "OLD",
        "json_extract(NEW.readdressed, '$.kind')",
        "json_extract(NEW.readdressed, '$.{}')",
    )
    given = ", ".join(moved.get(f, f"NEW.{f}") for f in ENTRY)
    return (
        "CREATE TRIGGER symfonic_audit_readdressed AFTER UPDATE OF readdressed"
        " ON symfonic_pauses WHEN NEW.state IS OLD.state AND NEW.readdressed IS NOT NULL"
        " AND NEW.readdressed IS NOT OLD.readdressed BEGIN"
        f" INSERT INTO symfonic_audit_intake ({', '.join(ENTRY)}) VALUES ({given}); END"
    )


def _view(entry: tuple[str, ...]) -> str:
    return f"CREATE VIEW symfonic_audit_intake AS SELECT {', '.join(entry)} FROM symfonic_audit"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _postgres():
            op.execute(statement)
        return
    for column in OPTIONAL:
        op.add_column("symfonic_audit", sa.Column(column, sa.Text, nullable=True))
    # Dropping the view drops its trigger; the pauses' triggers insert by column name.
    op.execute("DROP VIEW symfonic_audit_intake")
    op.execute(_view(ENTRY))
    op.execute(SQLITE_APPEND)
    op.execute(_sqlite_readdressed())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TRIGGER IF EXISTS symfonic_audit_readdressed")
        op.execute("DROP VIEW symfonic_audit_intake")
        op.execute(_view(OLD_ENTRY))
        op.execute(_version("0015_audit_trail.py").SQLITE[0])
        # The columns stay: dropping them would rebuild the table and its triggers.
        return
    for trigger in ("symfonic_audit_asked", "symfonic_audit_changed"):
        op.execute(f"DROP TRIGGER {trigger} ON symfonic_pauses")
        op.execute(f"DROP FUNCTION {trigger}()")
    op.execute("DROP TRIGGER symfonic_audit_append ON symfonic_audit_intake")
    op.execute("DROP FUNCTION symfonic_audit_append()")
    op.execute("DROP FUNCTION symfonic_audit_chain(symfonic_audit_entry[])")
    op.execute("DROP TYPE symfonic_audit_entry")
    op.execute("DROP VIEW symfonic_audit_intake")
    for column in OPTIONAL:
        op.drop_column("symfonic_audit", column)
    op.execute(_view(OLD_ENTRY))
    # Migration 0015's triggers, then 0018's in their place.
    for statement in _version("0015_audit_trail.py").POSTGRES:
        op.execute(statement)
    trail = _version("0018_audit_statement_triggers.py")
    trail._drop_all()
    for statement in trail.POSTGRES:
        op.execute(statement)
