"""The webhook outbox: who wants which event, and every delivery owed to them.

``symfonic_webhook_subscriptions`` says which URL wants which event type; each
worker writes its own configured URLs there at start-up. The secret never is:
it stays in the memory of the workers that sign.

``symfonic_webhook_deliveries`` is the outbox. A trigger on the record of pause
changes (``symfonic_pause_events``, migration 0004) inserts one delivery per
subscription to the change's event type, so a delivery is in the transaction of
the change that caused it by construction: a change that rolls back leaves no
delivery, and no statement that moves a pause has to know about webhooks.
``message_id`` (the ``webhook-id`` header) comes from the change's id, which is
never reused, and stays the same on every attempt. Deleting old changes (the
trim of retention) leaves the deliveries alone: the trigger fires on inserts
only.

Events that are not a pause's change of state (``pause.expiring``,
``turn.failed``) are inserted by the statements that decide them
(:mod:`symfonic.storage.webhooks`). The two dialects' DDL sit side by side.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# The webhook event type of each state a pause moves to; ``claimed`` has none.
_EVENT_TYPE = (
    "CASE NEW.state WHEN 'pending' THEN 'pause.created' WHEN 'published' THEN 'pause.answered'"
    " WHEN 'expired' THEN 'pause.expired' WHEN 'abandoned' THEN 'pause.abandoned'"
    " WHEN 'superseded' THEN 'pause.superseded' END"
)
_INSERT = (
    "INSERT INTO symfonic_webhook_deliveries (message_id, url, type, pause_id, session_id,"
    " occurred_at, state, attempts, next_attempt_at)"
    " SELECT 'msg_pause_' || NEW.id, s.url, s.event_type, NEW.pause_id, NEW.session_id,"
    " NEW.at, 'pending', 0, NEW.at"
    f" FROM symfonic_webhook_subscriptions s WHERE s.event_type = {_EVENT_TYPE}"
)
SQLITE_TRIGGERS = (
    "CREATE TRIGGER symfonic_pause_change_webhooks AFTER INSERT ON symfonic_pause_events"
    f" BEGIN {_INSERT}; END",
)
POSTGRES_TRIGGERS = (
    "CREATE FUNCTION symfonic_webhook_pause_change() RETURNS trigger LANGUAGE plpgsql AS $$"
    f" BEGIN {_INSERT}; RETURN NULL; END $$",
    "CREATE TRIGGER symfonic_pause_change_webhooks AFTER INSERT ON symfonic_pause_events"
    " FOR EACH ROW EXECUTE FUNCTION symfonic_webhook_pause_change()",
)


def upgrade() -> None:
    op.create_table(
        "symfonic_webhook_subscriptions",
        sa.Column("url", sa.String(2000), primary_key=True),
        sa.Column("event_type", sa.String(32), primary_key=True),
    )
    op.create_index(
        "ix_symfonic_webhook_subscriptions_event_type",
        "symfonic_webhook_subscriptions",
        ["event_type"],
    )
    op.create_table(
        "symfonic_webhook_deliveries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            sa.Identity(always=False),
            primary_key=True,
        ),
        sa.Column("message_id", sa.String(100), nullable=False),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("pause_id", sa.String(64), nullable=True),
        sa.Column("session_id", sa.String(64), nullable=True),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        # What an event that is not a pause's change carries (a failed turn's error), as JSON.
        sa.Column("detail", sa.Text, nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_id", sa.String(64), nullable=True),
        sa.Column("leased_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status", sa.Integer, nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("url", "message_id", name="uq_symfonic_webhook_deliveries_message"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_symfonic_webhook_deliveries_due",
        "symfonic_webhook_deliveries",
        ["state", "next_attempt_at"],
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRES_TRIGGERS if postgres else SQLITE_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    on_events = " ON symfonic_pause_events" if postgres else ""
    op.execute(f"DROP TRIGGER IF EXISTS symfonic_pause_change_webhooks{on_events}")
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS symfonic_webhook_pause_change()")
    op.drop_index("ix_symfonic_webhook_deliveries_due", "symfonic_webhook_deliveries")
    op.drop_table("symfonic_webhook_deliveries")
    op.drop_index("ix_symfonic_webhook_subscriptions_event_type", "symfonic_webhook_subscriptions")
    op.drop_table("symfonic_webhook_subscriptions")
