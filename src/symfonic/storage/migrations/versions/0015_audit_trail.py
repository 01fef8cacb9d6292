"""The audit trail: one hash-chained record per question, answer and settlement.

``symfonic_audit`` is append-only: each row is one thing that happened to a
pause (asked, answered, published, superseded, expired, abandoned), and holds
the hash of the row before it. Triggers on ``symfonic_pauses`` write the row,
so it is in the same transaction as the change by construction, as the feed's
events are (migration 0004): a change that rolls back leaves no record, and no
statement that moves a pause has to know about the audit.

Every record goes through one door, the view ``symfonic_audit_intake``, whose
``INSTEAD OF INSERT`` trigger numbers it, stamps it and chains it; code that
audits something else (a vote, a reassignment) inserts into the view the same
way. The chain's head (the last sequence and hash) is one row of
``symfonic_audit_head``; an append moves it with an ``UPDATE``, which on
PostgreSQL locks that row until the transaction commits. A second writer's
``UPDATE`` waits for the lock and then reads the row the first one committed
(READ COMMITTED re-reads a row it waited for), so two appends never take the
same sequence or the same previous hash: the chain cannot fork. On SQLite the
database's write lock already serialises every writer.

The hash is SHA-256 in hex of the record's RFC 8785 canonical JSON, its
``prev_hash`` included and its own ``hash`` left out. Every field is text, an
integer or null, whose JCS form PostgreSQL builds with ``to_json`` (it escapes
text exactly as JCS does) in the keys' sorted order; SQLite has no SHA-256, so
its trigger calls ``symfonic_audit_hash``, a function each of the store's
connections registers (:mod:`symfonic.storage.audit_log`), on the record as
``json_object`` gives it. The anchor (``anchor_sequence``, ``anchor_hash``) is
the last record pruned, from which verification starts.
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

GENESIS = "0" * 64
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
# What a caller hands the intake; the rest is the chain's.
INTAKE = tuple(f for f in FIELDS if f not in ("at", "prev_hash", "sequence"))

_ANSWERED = "('claimed', 'published', 'superseded')"
_WHO = (
    f"CASE WHEN NEW.state IN {_ANSWERED} THEN NEW.answered_by"
    " WHEN NEW.state = 'abandoned' AND OLD.state = 'pending' THEN NEW.principal"
    " WHEN NEW.state = 'abandoned' THEN NEW.answered_by END"
)
_EVENT = "CASE NEW.state WHEN 'claimed' THEN 'answered' ELSE NEW.state END"


def _decision(field: str) -> str:
    return (
        "CASE WHEN NEW.state <> 'claimed' THEN NULL"
        " WHEN NEW.answer_status = 'cancelled' THEN 'cancelled'"
        f" WHEN NEW.kind = 'approval' THEN {field.format('decision')} ELSE 'answered' END"
    )


def _reason(field: str) -> str:
    return (
        "CASE WHEN NEW.state = 'claimed' AND NEW.kind = 'approval'"
        f" THEN {field.format('reason')}"
        " WHEN NEW.state = 'abandoned' AND OLD.state = 'claimed'"
        " THEN 'the turn that answered it failed or its claim lapsed'"
        " WHEN NEW.state = 'abandoned' THEN 'a new turn in its session abandoned it'"
        " WHEN NEW.state = 'expired' THEN 'nobody answered before it expired' END"
    )


def _intake(values: dict[str, str]) -> str:
    """The insert into the intake of one pause's change, from ``NEW`` by default."""
    columns = ", ".join(INTAKE)
    given = ", ".join(values.get(f, f"NEW.{f}") for f in INTAKE)
    return f"INSERT INTO symfonic_audit_intake ({columns}) VALUES ({given});"


_ASKED = {"event": "'asked'", "decision": "NULL", "reason": "NULL"}


def _changed(answer_field: str) -> dict[str, str]:
    return {
        "event": _EVENT,
        "principal": _WHO,
        "decision": _decision(answer_field),
        "reason": _reason(answer_field),
    }


_SQLITE_FIELD = "CAST(json_extract(NEW.answer, '$.{}') AS TEXT)"
_SQLITE_STAMP = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_SQLITE_RECORD = ", ".join(f"'{f}', r.{f}" for f in FIELDS)
_SQLITE_CHAINED = ", ".join(f"CAST(NEW.{f} AS TEXT) AS {f}" for f in INTAKE)
SQLITE = (
    "CREATE TRIGGER symfonic_audit_append INSTEAD OF INSERT ON symfonic_audit_intake BEGIN"
    " UPDATE symfonic_audit_head SET sequence = sequence + 1 WHERE id = 1;"
    f" INSERT INTO symfonic_audit ({', '.join(FIELDS)}, hash)"
    f" SELECT {', '.join(f'r.{f}' for f in FIELDS)},"
    f" symfonic_audit_hash(json_object({_SQLITE_RECORD}))"
    f" FROM (SELECT h.sequence AS sequence, {_SQLITE_STAMP} AS at, h.hash AS prev_hash,"
    f" {_SQLITE_CHAINED} FROM symfonic_audit_head h WHERE h.id = 1) r;"
    " UPDATE symfonic_audit_head SET hash = (SELECT a.hash FROM symfonic_audit a"
    " WHERE a.sequence = symfonic_audit_head.sequence) WHERE id = 1;"
    " END",
    "CREATE TRIGGER symfonic_audit_asked AFTER INSERT ON symfonic_pauses"
    f" BEGIN {_intake(_ASKED)} END",
    "CREATE TRIGGER symfonic_audit_changed AFTER UPDATE OF state ON symfonic_pauses"
    f" WHEN OLD.state IS NOT NEW.state BEGIN {_intake(_changed(_SQLITE_FIELD))} END",
)

_PG_FIELD = "NEW.answer ->> '{}'"


def _pg_json(field: str) -> str:
    if field == "sequence":
        return "CAST(chained.sequence AS text)"
    return f"coalesce(CAST(to_json(chained.{field}) AS text), 'null')"


_PG_CANONICAL = " || ',' || ".join(f"'\"{f}\":' || {_pg_json(f)}" for f in FIELDS)
POSTGRES = (
    "CREATE FUNCTION symfonic_audit_append() RETURNS trigger LANGUAGE plpgsql AS $$"
    " DECLARE chained symfonic_audit%ROWTYPE;"
    " BEGIN"
    # Locks the head until commit: the next writer waits here, then reads this one's row.
    "  UPDATE symfonic_audit_head SET sequence = sequence + 1 WHERE id = 1"
    "  RETURNING sequence, hash INTO chained.sequence, chained.prev_hash;"
    "  chained.at := to_char(clock_timestamp() AT TIME ZONE 'UTC',"
    '   \'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\');'
    + "".join(f"  chained.{f} := NEW.{f};" for f in INTAKE)
    + f"  chained.hash := encode(sha256(convert_to('{{' || {_PG_CANONICAL} || '}}',"
    " 'UTF8')), 'hex');"
    "  INSERT INTO symfonic_audit SELECT chained.*;"
    "  UPDATE symfonic_audit_head SET hash = chained.hash WHERE id = 1;"
    "  RETURN NEW;"
    " END $$",
    "CREATE TRIGGER symfonic_audit_append INSTEAD OF INSERT ON symfonic_audit_intake"
    " FOR EACH ROW EXECUTE FUNCTION symfonic_audit_append()",
    "CREATE FUNCTION symfonic_audit_asked() RETURNS trigger LANGUAGE plpgsql AS $$"
    f" BEGIN {_intake(_ASKED)} RETURN NULL; END $$",
    "CREATE FUNCTION symfonic_audit_changed() RETURNS trigger LANGUAGE plpgsql AS $$"
    f" BEGIN {_intake(_changed(_PG_FIELD))} RETURN NULL; END $$",
    "CREATE TRIGGER symfonic_audit_asked AFTER INSERT ON symfonic_pauses"
    " FOR EACH ROW EXECUTE FUNCTION symfonic_audit_asked()",
    "CREATE TRIGGER symfonic_audit_changed AFTER UPDATE OF state ON symfonic_pauses"
    " FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)"
    " EXECUTE FUNCTION symfonic_audit_changed()",
)


def upgrade() -> None:
    text = sa.Text()
    op.create_table(
        "symfonic_audit",
        *(
            sa.Column(f, sa.BigInteger, primary_key=True, autoincrement=False)
            if f == "sequence"
            else sa.Column(f, text, nullable=f not in ("at", "event", "prev_hash"))
            for f in FIELDS
        ),
        sa.Column("hash", text, nullable=False),
    )
    op.create_table(
        "symfonic_audit_head",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("hash", text, nullable=False),
        sa.Column("anchor_sequence", sa.BigInteger, nullable=False),
        sa.Column("anchor_hash", text, nullable=False),
        sa.CheckConstraint("id = 1", name="ck_symfonic_audit_head_one_row"),
    )
    op.execute(
        "INSERT INTO symfonic_audit_head (id, sequence, hash, anchor_sequence, anchor_hash)"
        f" VALUES (1, 0, '{GENESIS}', 0, '{GENESIS}')"
    )
    op.execute(
        f"CREATE VIEW symfonic_audit_intake AS SELECT {', '.join(INTAKE)} FROM symfonic_audit"
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRES if postgres else SQLITE:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    on_pauses = " ON symfonic_pauses" if postgres else ""
    for trigger in ("symfonic_audit_changed", "symfonic_audit_asked"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}{on_pauses}")
    op.execute("DROP VIEW symfonic_audit_intake")
    if postgres:
        for function in ("symfonic_audit_changed", "symfonic_audit_asked", "symfonic_audit_append"):
            op.execute(f"DROP FUNCTION IF EXISTS {function}()")
    op.drop_table("symfonic_audit_head")
    op.drop_table("symfonic_audit")
