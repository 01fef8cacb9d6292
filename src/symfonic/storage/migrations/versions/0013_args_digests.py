"""What exactly was approved: the asked call's digest, and an edit's, on the pause row.

``args_digest`` is written when an approval pause is asked; every view of the
pause reads it from the row, which outlives the checkpoint holding the
arguments. ``edited_args_digest`` is written by the claim of an answer that
edited the arguments, so the row records both what was asked and what ran.
Plain ``ADD COLUMN`` on SQLite: a batch alter would rebuild the table and drop
the triggers of migration 0004.
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_COLUMNS = ("args_digest", "edited_args_digest")


def upgrade() -> None:
    for column in _COLUMNS:
        op.add_column("symfonic_pauses", sa.Column(column, sa.String(64), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for column in _COLUMNS:
            op.drop_column("symfonic_pauses", column)
    # SQLite keeps the columns: dropping them would rebuild the table and its triggers.
