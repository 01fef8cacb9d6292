"""Approvals that need several people: the quorum on the pause row, one row per vote.

On the pause row: ``approvals_required`` (how many distinct principals must
approve; 1 for a pause one answer settles), ``allow_requester`` (whether the
principal whose turn paused may approve it) and ``approvals`` (the votes so
far, JSON, written with each vote so that every view of the pause reads them
from the row alone).

``symfonic_pause_approvals`` holds one row per vote, keyed by
``(pause_id, principal)``: the key is what makes a second approval by the same
principal impossible to count, whatever the worker. The vote's transaction
locks the pause row before it writes here (see
:mod:`symfonic.storage.approval_votes`), so the count it reads is exact.

Plain ``ADD COLUMN`` on SQLite: a batch alter would rebuild the table and drop
the triggers of migrations 0004, 0014, 0015 and 0018.
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

TABLE = "symfonic_pauses"
VOTES = "symfonic_pause_approvals"


def upgrade() -> None:
    op.add_column(
        TABLE, sa.Column("approvals_required", sa.Integer, nullable=False, server_default="1")
    )
    op.add_column(
        TABLE,
        sa.Column("allow_requester", sa.Boolean, nullable=False, server_default=sa.true()),
    )
    op.add_column(TABLE, sa.Column("approvals", sa.JSON, nullable=True))
    op.create_table(
        VOTES,
        sa.Column("pause_id", sa.String(64), primary_key=True),
        sa.Column("principal", sa.String(200), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("args_digest", sa.String(64), nullable=True),
    )


def downgrade() -> None:
    op.drop_table(VOTES)
    if op.get_bind().dialect.name == "postgresql":
        for column in ("approvals_required", "allow_requester", "approvals"):
            op.drop_column(TABLE, column)
    # SQLite keeps the columns: dropping them would rebuild the table and its triggers.
