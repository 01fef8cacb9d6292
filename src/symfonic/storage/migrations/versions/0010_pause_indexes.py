"""Every hot read of pauses finds its rows through an index that names them.

With only ``state`` and ``session_id`` indexed, a planner without statistics
(SQLite as shipped, PostgreSQL before autovacuum analyses the table) may read a
session's pauses, or check one before a turn starts, through the ``state``
index: every pending pause, however many wait. These indexes leave it no such
choice, whatever statistics it has:

- ``(session_id, state, expires_at)``: a session's open pause, and the check
  at the start of a turn with its count of waiting pauses (``session_id = ?
  AND state = ? AND expires_at > ?``): three constraints, where SQLite without
  statistics would rank ``state = ? AND expires_at > ?`` above two equalities;
- ``(state, expires_at)``: the sweep reads only the pauses due;
- ``(state, lease_until)``: the sweep reads only the claims past their lease;
- ``(state, principal, created_at)`` and ``(state, audience, created_at)``: a
  principal's and a scope's pending pauses, oldest first, as listed.

A claim is by primary key. The single-column indexes these extend are dropped.
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TABLE = "symfonic_pauses"
NEW = {
    "ix_symfonic_pauses_session_state": ["session_id", "state", "expires_at"],
    "ix_symfonic_pauses_due": ["state", "expires_at"],
    "ix_symfonic_pauses_lapsing": ["state", "lease_until"],
    "ix_symfonic_pauses_principal": ["state", "principal", "created_at"],
    "ix_symfonic_pauses_audience": ["state", "audience", "created_at"],
}
OLD = {
    "ix_symfonic_pauses_session_id": ["session_id"],
    "ix_symfonic_pauses_state": ["state"],
}


def upgrade() -> None:
    for name, columns in NEW.items():
        op.create_index(name, TABLE, columns)
    for name in OLD:
        op.drop_index(name, TABLE)


def downgrade() -> None:
    for name, columns in OLD.items():
        op.create_index(name, TABLE, columns)
    for name in NEW:
        op.drop_index(name, TABLE)
