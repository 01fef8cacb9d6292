"""The tables, as SQLAlchemy Core objects shared by both adapters and the migrations.

History is stored once, a row per message; a checkpoint lives in its pause's row
(docs/storage.md).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

Timestamp = sa.DateTime(timezone=True)

meta = sa.Table(
    "symfonic_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.LargeBinary, nullable=False),
)

sessions = sa.Table(
    "symfonic_sessions",
    metadata,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("principal", sa.String(200), nullable=False, index=True),
    sa.Column("agent", sa.String(200), nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("message_count", sa.Integer, nullable=False),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("run_id", sa.String(64), nullable=True),
    sa.Column("run_lease", Timestamp, nullable=True),
    # The session's creation or its latest first turn: what retention measures idleness by.
    sa.Column("active_at", Timestamp, nullable=True, index=True),
)

messages = sa.Table(
    "symfonic_messages",
    metadata,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("body", sa.JSON, nullable=False),
)

pauses = sa.Table(
    "symfonic_pauses",
    metadata,
    sa.Column("pause_id", sa.String(64), primary_key=True),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("principal", sa.String(200), nullable=False),
    sa.Column("agent", sa.String(200), nullable=False),
    sa.Column("audience", sa.String(200), nullable=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("response_schema", sa.JSON, nullable=False),
    sa.Column("tool_call_id", sa.String(200), nullable=False),
    sa.Column("interrupt_id", sa.String(200), nullable=False),
    sa.Column("base_revision", sa.Integer, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
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
    # The paused turn, until the pause is published or superseded (then NULL).
    sa.Column("checkpoint_format", sa.Integer, nullable=True),
    sa.Column("checkpoint", sa.JSON, nullable=True),
    # Delegation (migration 0007): a delegate's own pause names the parent's
    # session; the parent's pause names the delegate's pause and the delegate.
    sa.Column("parent_session_id", sa.String(200), nullable=True),
    sa.Column("delegated_pause_id", sa.String(200), nullable=True),
    sa.Column("sub_agent", sa.String(200), nullable=True),
    sa.Column("args_digest", sa.String(64), nullable=True),
    sa.Column("edited_args_digest", sa.String(64), nullable=True),
    # Re-addressing (migration 0016): see symfonic.storage.readdressing.
    sa.Column("escalations", sa.JSON, nullable=True),
    sa.Column("escalation_step", sa.Integer, nullable=False, server_default="0"),
    sa.Column("escalate_at", Timestamp, nullable=True),
    sa.Column("kept_audiences", sa.JSON, nullable=True),
    sa.Column("readdressed", sa.JSON, nullable=True),
    # The quorum (migration 0019): see symfonic.storage.approval_votes.
    sa.Column("approvals_required", sa.Integer, nullable=False, server_default="1"),
    sa.Column("allow_requester", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("approvals", sa.JSON, nullable=True),
    # The MCP server that asked, for a server's question (migration 0021).
    sa.Column("server", sa.String(200), nullable=True),
    # Each hot read's own index (migration 0010): see docs/storage.md, Indexes.
    sa.Index("ix_symfonic_pauses_session_state", "session_id", "state", "expires_at"),
    sa.Index("ix_symfonic_pauses_due", "state", "expires_at"),
    sa.Index("ix_symfonic_pauses_lapsing", "state", "lease_until"),
    # Ending in pause_id: a listing's order, read without a sort (migration 0011).
    sa.Index("ix_symfonic_pauses_principal", "state", "principal", "created_at", "pause_id"),
    sa.Index("ix_symfonic_pauses_audience", "state", "audience", "created_at", "pause_id"),
    sa.Index("ix_symfonic_pauses_escalating", "state", "escalate_at"),
)

# The audiences a re-addressed pause kept, one row each, for the listing's index.
pause_audiences = sa.Table(
    "symfonic_pause_audiences",
    metadata,
    sa.Column("audience", sa.String(200), primary_key=True),
    sa.Column("pause_id", sa.String(64), primary_key=True),
    sa.Index("ix_symfonic_pause_audiences_pause", "pause_id"),
)

# One row per approval of a pause that needs several; the key counts a principal once.
pause_approvals = sa.Table(
    "symfonic_pause_approvals",
    metadata,
    sa.Column("pause_id", sa.String(64), primary_key=True),
    sa.Column("principal", sa.String(200), primary_key=True),
    sa.Column("at", Timestamp, nullable=False),
    sa.Column("args_digest", sa.String(64), nullable=True),
)

# One row per pause created and per change of its state, written by triggers
# (migration 0004): ``id`` is the live feed's position. On SQLite, ids need no
# AUTOINCREMENT and ``at`` no index (migration 0008).
pause_events = sa.Table(
    "symfonic_pause_events",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        sa.Identity(always=False),
        primary_key=True,
    ),
    sa.Column("pause_id", sa.String(64), nullable=False),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("at", Timestamp, nullable=False),
    sa.Index("ix_symfonic_pause_events_at", "at").ddl_if(dialect="postgresql"),
)

# Runs whose events are kept, and their events (migration 0021): see
# symfonic.storage.run_events. ``id`` rises across runs: SQLite's watch reads it.
runs = sa.Table(
    "symfonic_runs",
    metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("principal", sa.String(200), nullable=False),
    sa.Column("audience", sa.String(200), nullable=True),
    sa.Column("pause_id", sa.String(64), nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("outcome", sa.JSON, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("ended_at", Timestamp, nullable=True),
    sa.Column("lease_until", Timestamp, nullable=False),
    sa.Column("events", sa.Integer, nullable=False, server_default="0"),
    sa.Column("dropped", sa.Integer, nullable=False, server_default="0"),
    sa.Index("ix_symfonic_runs_session", "session_id"),
    sa.Index("ix_symfonic_runs_ended", "state", "ended_at"),
)

run_events = sa.Table(
    "symfonic_run_events",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        sa.Identity(always=False),
        primary_key=True,
    ),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Index("ix_symfonic_run_events_run", "run_id", "seq", unique=True),
    sqlite_autoincrement=True,
)

# Messages queued for a busy session (migration 0023): see symfonic.storage.run_queue.
run_queue = sa.Table(
    "symfonic_run_queue",
    metadata,
    sa.Column(
        "position",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        sa.Identity(always=False),
        primary_key=True,
    ),
    sa.Column("run_id", sa.String(64), nullable=False, unique=True),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("principal", sa.String(200), nullable=False),
    sa.Column("scopes", sa.JSON, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("on_pending_pause", sa.String(16), nullable=False),
    sa.Column("queued_at", Timestamp, nullable=False),
    sa.Index("ix_symfonic_run_queue_session", "session_id", "position"),
    sqlite_autoincrement=True,
)

# Which URL wants which webhook event type (migration 0005); never the secret.
webhook_subscriptions = sa.Table(
    "symfonic_webhook_subscriptions",
    metadata,
    sa.Column("url", sa.String(2000), primary_key=True),
    sa.Column("event_type", sa.String(32), primary_key=True, index=True),
)

# The webhook outbox: one row per event owed to one URL, and how its delivery went.
webhook_deliveries = sa.Table(
    "symfonic_webhook_deliveries",
    metadata,
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
    sa.Column("occurred_at", Timestamp, nullable=False),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", Timestamp, nullable=False),
    sa.Column("lease_id", sa.String(64), nullable=True),
    sa.Column("leased_until", Timestamp, nullable=True),
    sa.Column("last_status", sa.Integer, nullable=True),
    sa.Column("last_error", sa.String(500), nullable=True),
    sa.Column("delivered_at", Timestamp, nullable=True),
    sa.UniqueConstraint("url", "message_id"),
    sa.Index("ix_symfonic_webhook_deliveries_due", "state", "next_attempt_at"),
    # Leasing per destination, earliest due first (migration 0009).
    sa.Index("ix_symfonic_webhook_deliveries_destination", "url", "state", "next_attempt_at", "id"),
    sqlite_autoincrement=True,
)

# Each destination's circuit, shared by every worker (migration 0009).
webhook_destinations = sa.Table(
    "symfonic_webhook_destinations",
    metadata,
    sa.Column("url", sa.String(2000), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("opens", sa.Integer, nullable=False),
    sa.Column("retry_at", Timestamp, nullable=True),
    sa.Column("changed_at", Timestamp, nullable=False),
    sa.Column("last_error", sa.String(500), nullable=True),
    sa.Column("version", sa.Integer, nullable=False),
)
