"""Messages queued for a busy session, each with the run it will be.

``symfonic_run_queue`` holds one row per message sent with
``on_busy="enqueue"`` that has not been taken yet: whose it is (the sender's
name and scopes), the message and its ``on_pending_pause``, and ``position``,
which rises across all sessions and is never reused, so a session's queue is
read in the order its messages were accepted. ``(session_id, position)`` finds
a session's head; ``run_id`` is the queued run's, whose row in
``symfonic_runs`` reads ``queued`` meanwhile.
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

QUEUE = "symfonic_run_queue"


def upgrade() -> None:
    op.create_table(
        QUEUE,
        sa.Column(
            "position",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            sa.Identity(always=False),
            primary_key=True,
        ),
        sa.Column("run_id", sa.String(64), nullable=False, unique=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("scopes", sa.JSON, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("on_pending_pause", sa.String(16), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        # Positions never reused, so a session's order holds across deletes.
        sqlite_autoincrement=True,
    )
    op.create_index("ix_symfonic_run_queue_session", QUEUE, ["session_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_symfonic_run_queue_session", QUEUE)
    op.drop_table(QUEUE)
