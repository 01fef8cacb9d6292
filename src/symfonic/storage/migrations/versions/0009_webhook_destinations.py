"""Webhook destinations: a circuit per URL, deliveries leased per URL, ids never reused.

``symfonic_webhook_destinations`` holds each URL's circuit (closed, open,
half-open), shared by every worker: a destination that keeps failing is left
alone until its backoff ends, by all of them at once. Each change is a
compare-and-swap on ``version``.

Deliveries are leased one destination at a time, earliest due first; the index
on ``(url, state, next_attempt_at, id)`` serves that read in order, so a
backlog for one URL is never scanned to lease another's.

A pause change's ``webhook-id`` was ``msg_pause_`` and the change's id, which
starts again at 1 in every new database: a receiver that dedupes on it would
drop the events of a reset store. It now carries the pause's id too, a random
UUID, so no two stores hand out the same one. Deliveries already owed keep
their ids (a retry sends the same id as before).
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TABLE = "symfonic_webhook_destinations"
INDEX = "ix_symfonic_webhook_deliveries_destination"
TRIGGER = "symfonic_pause_change_webhooks"

_EVENT_TYPE = (
    "CASE NEW.state WHEN 'pending' THEN 'pause.created' WHEN 'published' THEN 'pause.answered'"
    " WHEN 'expired' THEN 'pause.expired' WHEN 'abandoned' THEN 'pause.abandoned'"
    " WHEN 'superseded' THEN 'pause.superseded' END"
)


def _insert(message_id: str) -> str:
    return (
        "INSERT INTO symfonic_webhook_deliveries (message_id, url, type, pause_id, session_id,"
        " occurred_at, state, attempts, next_attempt_at)"
        f" SELECT {message_id}, s.url, s.event_type, NEW.pause_id, NEW.session_id,"
        " NEW.at, 'pending', 0, NEW.at"
        f" FROM symfonic_webhook_subscriptions s WHERE s.event_type = {_EVENT_TYPE}"
    )


UNIQUE_ID = "'msg_pause_' || NEW.pause_id || '_' || NEW.id"
OLD_ID = "'msg_pause_' || NEW.id"


def _trigger(message_id: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE OR REPLACE FUNCTION symfonic_webhook_pause_change() RETURNS trigger"
            f" LANGUAGE plpgsql AS $$ BEGIN {_insert(message_id)}; RETURN NULL; END $$"
        )
        return
    op.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}")
    op.execute(
        f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON symfonic_pause_events"
        f" BEGIN {_insert(message_id)}; END"
    )


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("url", sa.String(2000), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("opens", sa.Integer, nullable=False),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("version", sa.Integer, nullable=False),
    )
    op.create_index(INDEX, "symfonic_webhook_deliveries", ["url", "state", "next_attempt_at", "id"])
    _trigger(UNIQUE_ID)


def downgrade() -> None:
    _trigger(OLD_ID)
    op.drop_index(INDEX, "symfonic_webhook_deliveries")
    op.drop_table(TABLE)
