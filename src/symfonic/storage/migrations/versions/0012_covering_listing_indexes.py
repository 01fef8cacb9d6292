"""A listing's indexes hold every column its count filters on, so a total reads no rows.

``GET /v1/pauses`` and the feed's snapshot give a ``total``: a count of every
pause in a principal's and its scopes' ranges, filtered on the hosted agents,
the kind, the expiry and the delegate flag. With only ``(state, principal |
audience, created_at, pause_id)`` in the index, the count fetched each row of
the range from the table to test those (12,500 rows, one page each, for a
``finance`` holder at 100k pending). Carrying ``agent``, ``kind``,
``expires_at`` and ``parent_session_id`` (and, for a principal's own range,
``audience``) in the index lets the count read index entries alone. The count
stays exact and still reads one entry per pause in the range; docs/scale.md
has what that costs.

- PostgreSQL keeps them as ``INCLUDE`` payload after the listing's keys: an
  index-only scan reads them on the pages the visibility map marks
  all-visible, which autovacuum keeps.
- SQLite appends them as trailing key columns; the leading ones are already
  unique, so the listing's order is unchanged. A principal's own range is
  ``audience IS NULL``, so there ``audience`` comes before ``created_at``:
  SQLite takes ``IS NULL`` as an equality that keeps the order, and without
  statistics it would otherwise prefer the narrower audience index's
  ``(state, audience IS NULL)``, every unaddressed pause. PostgreSQL does not
  order by a key after an ``IS NULL``, hence its ``audience`` in the payload.
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TABLE = "symfonic_pauses"
FILTERED = ["agent", "kind", "expires_at", "parent_session_id"]
LISTED = ["created_at", "pause_id"]


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    principal, audience = "ix_symfonic_pauses_principal", "ix_symfonic_pauses_audience"
    for name in (principal, audience):
        op.drop_index(name, TABLE)
    if postgres:
        op.create_index(
            principal,
            TABLE,
            ["state", "principal", *LISTED],
            postgresql_include=["audience", *FILTERED],
        )
        op.create_index(
            audience, TABLE, ["state", "audience", *LISTED], postgresql_include=FILTERED
        )
    else:
        op.create_index(principal, TABLE, ["state", "principal", "audience", *LISTED, *FILTERED])
        op.create_index(audience, TABLE, ["state", "audience", *LISTED, *FILTERED])


def downgrade() -> None:
    for scope in ("principal", "audience"):
        op.drop_index(f"ix_symfonic_pauses_{scope}", TABLE)
        op.create_index(f"ix_symfonic_pauses_{scope}", TABLE, ["state", scope, *LISTED])
