"""A listing's indexes end with ``pause_id``, so a page is read in its own order.

A listing is ordered by ``(created_at, pause_id)``. With ``(state, principal |
audience, created_at)`` a planner that does not know how many rows a range
holds (PostgreSQL never analysed) may read the whole range and sort it to keep
the first page: every pending pause of a scope, 12,500 rows and 123 ms for a
50-row page at 100k pending. Ending the indexes with ``pause_id`` makes the
index order the listing's order: the page is the first rows of the range, read
and returned without a sort, whatever the planner estimates.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TABLE = "symfonic_pauses"
INDEXES = {
    "ix_symfonic_pauses_principal": ["state", "principal", "created_at"],
    "ix_symfonic_pauses_audience": ["state", "audience", "created_at"],
}


def upgrade() -> None:
    for name, columns in INDEXES.items():
        op.drop_index(name, TABLE)
        op.create_index(name, TABLE, [*columns, "pause_id"])


def downgrade() -> None:
    for name, columns in INDEXES.items():
        op.drop_index(name, TABLE)
        op.create_index(name, TABLE, columns)
