"""Which MCP server asked: ``server`` on the pause row, for an MCP server's question.

Written when the pause is asked (``NULL`` for every other pause) and read by
every view of it -- the listing, the feed, webhooks, AG-UI -- so a person sees
which server wants the answer without the checkpoint, which is gone once the
pause is answered. Plain ``ADD COLUMN`` on SQLite: a batch alter would rebuild
the table and drop the triggers of migration 0004.
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("symfonic_pauses", sa.Column("server", sa.String(200), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_column("symfonic_pauses", "server")
    # SQLite keeps the column: dropping it would rebuild the table and its triggers.
