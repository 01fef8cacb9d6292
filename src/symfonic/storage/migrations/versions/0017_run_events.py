"""Runs and their kept events, for streams any worker can rejoin.

``symfonic_runs`` holds one row per run whose events are kept: whose it is
(the session's owner, and a resume's pause and audience), its state and
outcome, its lease while it runs, and how many events it kept and dropped.
``(state, ended_at)`` lets retention find the runs whose events are due.

``symfonic_run_events`` holds the events, numbered per run from 1; ``id``
rises across all runs, so a worker without notifications (SQLite) learns of
new events by one read of its largest value.
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

RUNS = "symfonic_runs"
EVENTS = "symfonic_run_events"


def upgrade() -> None:
    op.create_table(
        RUNS,
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("audience", sa.String(200), nullable=True),
        sa.Column("pause_id", sa.String(64), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("outcome", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("events", sa.Integer, nullable=False, server_default="0"),
        sa.Column("dropped", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_symfonic_runs_session", RUNS, ["session_id"])
    op.create_index("ix_symfonic_runs_ended", RUNS, ["state", "ended_at"])
    op.create_table(
        EVENTS,
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            sa.Identity(always=False),
            primary_key=True,
        ),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        # Ids never reused after retention deletes the newest: SQLite's watch reads them.
        sqlite_autoincrement=True,
    )
    op.create_index("ix_symfonic_run_events_run", EVENTS, ["run_id", "seq"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_symfonic_run_events_run", EVENTS)
    op.drop_table(EVENTS)
    op.drop_index("ix_symfonic_runs_ended", RUNS)
    op.drop_index("ix_symfonic_runs_session", RUNS)
    op.drop_table(RUNS)
