"""Sessions record when a turn last started on them, for retention.

``active_at`` is the session's creation or its latest first turn; a resume's
activity is its pause's ``answered_at``. Together they say how long a session
has been idle, which is what retention deletes by. Existing sessions start from
their creation time.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("symfonic_sessions") as batch:
        batch.add_column(sa.Column("active_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE symfonic_sessions SET active_at = created_at")
    op.create_index("ix_symfonic_sessions_active_at", "symfonic_sessions", ["active_at"])


def downgrade() -> None:
    op.drop_index("ix_symfonic_sessions_active_at", "symfonic_sessions")
    with op.batch_alter_table("symfonic_sessions") as batch:
        batch.drop_column("active_at")
