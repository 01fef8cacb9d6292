"""The record of pause changes loses its index on ``pause_id``.

No statement looks a change up by its pause: the feed and the trim walk the
record by ``id`` and ``at``, and a change reaches its pause through the
pause's own key. An index nothing reads is still written by every pause
change, in the transaction of the change, so it goes.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

INDEX = "ix_symfonic_pause_events_pause_id"


def upgrade() -> None:
    op.drop_index(INDEX, "symfonic_pause_events")


def downgrade() -> None:
    op.create_index(INDEX, "symfonic_pause_events", ["pause_id"])
