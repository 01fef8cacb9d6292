"""Re-addressing a pending pause: its escalation chain, and who kept access.

On the pause row: ``escalations`` (the chain, JSON), ``escalation_step`` (how
many of its steps are applied: the condition of the sweep's single-use
update), ``escalate_at`` (when the next step is due; NULL when none is left),
``kept_audiences`` (who still answers besides the current audience, JSON) and
``readdressed`` (the latest escalation or reassignment, JSON, for every view
of the pause). ``(state, escalate_at)`` lets the sweep read only the steps due.

``symfonic_pause_audiences`` holds one row per kept audience of a pending
pause, so a listing finds the pauses a scope kept through an index instead of
reading every pending pause's JSON.

Plain ``ADD COLUMN`` on SQLite: a batch alter would rebuild the table and drop
the triggers of migration 0004.
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

TABLE = "symfonic_pauses"
AUDIENCES = "symfonic_pause_audiences"


def upgrade() -> None:
    op.add_column(TABLE, sa.Column("escalations", sa.JSON, nullable=True))
    op.add_column(
        TABLE, sa.Column("escalation_step", sa.Integer, nullable=False, server_default="0")
    )
    op.add_column(TABLE, sa.Column("escalate_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(TABLE, sa.Column("kept_audiences", sa.JSON, nullable=True))
    op.add_column(TABLE, sa.Column("readdressed", sa.JSON, nullable=True))
    op.create_index("ix_symfonic_pauses_escalating", TABLE, ["state", "escalate_at"])
    op.create_table(
        AUDIENCES,
        sa.Column("audience", sa.String(200), primary_key=True),
        sa.Column("pause_id", sa.String(64), primary_key=True),
    )
    op.create_index("ix_symfonic_pause_audiences_pause", AUDIENCES, ["pause_id"])


def downgrade() -> None:
    op.drop_index("ix_symfonic_pause_audiences_pause", AUDIENCES)
    op.drop_table(AUDIENCES)
    op.drop_index("ix_symfonic_pauses_escalating", TABLE)
    if op.get_bind().dialect.name == "postgresql":
        for column in ("escalations", "escalation_step", "escalate_at", "kept_audiences"):
            op.drop_column(TABLE, column)
        op.drop_column(TABLE, "readdressed")
    # SQLite keeps the columns: dropping them would rebuild the table and its triggers.
