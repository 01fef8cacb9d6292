"""A pause's checkpoint moves into its row; the checkpoints table goes.

Checkpoints still waiting for an answer are copied over, so a pause recorded
before the upgrade is resumed after it. Published and superseded pauses had
their checkpoint deleted already; abandoned and expired ones keep theirs.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_OF_PAUSE = "FROM symfonic_checkpoints c WHERE c.pause_id = symfonic_pauses.pause_id"


def upgrade() -> None:
    with op.batch_alter_table("symfonic_pauses") as batch:
        batch.add_column(sa.Column("checkpoint_format", sa.Integer, nullable=True))
        batch.add_column(sa.Column("checkpoint", sa.JSON, nullable=True))
    op.execute(
        f"UPDATE symfonic_pauses SET checkpoint_format = (SELECT c.format_version {_OF_PAUSE}),"
        f" checkpoint = (SELECT c.body {_OF_PAUSE})"
        f" WHERE EXISTS (SELECT 1 {_OF_PAUSE})"
    )
    op.drop_table("symfonic_checkpoints")


def downgrade() -> None:
    op.create_table(
        "symfonic_checkpoints",
        sa.Column("pause_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("format_version", sa.Integer, nullable=False),
        sa.Column("base_revision", sa.Integer, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
    )
    op.execute(
        "INSERT INTO symfonic_checkpoints (pause_id, session_id, format_version,"
        " base_revision, body) SELECT pause_id, session_id, checkpoint_format, base_revision,"
        " checkpoint FROM symfonic_pauses WHERE checkpoint IS NOT NULL"
    )
    with op.batch_alter_table("symfonic_pauses") as batch:
        batch.drop_column("checkpoint")
        batch.drop_column("checkpoint_format")
