"""The initial schema: meta, sessions, messages, pauses, checkpoints."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "symfonic_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "symfonic_sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("principal", sa.String(200), nullable=False, index=True),
        sa.Column("agent", sa.String(200), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("run_lease", Timestamp, nullable=True),
    )
    op.create_table(
        "symfonic_messages",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
    )
    op.create_table(
        "symfonic_pauses",
        sa.Column("pause_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False, index=True),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("agent", sa.String(200), nullable=False),
        sa.Column("audience", sa.String(200), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("response_schema", sa.JSON, nullable=False),
        sa.Column("tool_call_id", sa.String(200), nullable=False),
        sa.Column("interrupt_id", sa.String(200), nullable=False),
        sa.Column("base_revision", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.Column("supersedes", sa.String(64), nullable=True),
        sa.Column("claim_id", sa.String(64), nullable=True),
        sa.Column("lease_until", Timestamp, nullable=True),
        sa.Column("answered_by", sa.String(200), nullable=True),
        sa.Column("answered_at", Timestamp, nullable=True),
        sa.Column("answer", sa.JSON, nullable=True),
        sa.Column("answer_status", sa.String(16), nullable=True),
        sa.Column("outcome", sa.JSON, nullable=True),
    )
    op.create_table(
        "symfonic_checkpoints",
        sa.Column("pause_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("format_version", sa.Integer, nullable=False),
        sa.Column("base_revision", sa.Integer, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "symfonic_checkpoints",
        "symfonic_pauses",
        "symfonic_messages",
        "symfonic_sessions",
        "symfonic_meta",
    ):
        op.drop_table(table)
