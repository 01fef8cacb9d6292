"""Every name symfonic's telemetry is exported under, in one place: a contract with the
dashboards built on them, listed in docs/observability.md.
"""

from __future__ import annotations

from typing import Final

INSTRUMENTATION: Final = "symfonic"
"""The tracer's and the meter's instrumentation scope."""

# Spans --------------------------------------------------------------------
TURN: Final = "symfonic.turn"
PAUSE: Final = "symfonic.pause"
RESUME: Final = "symfonic.resume"
CLAIM: Final = "symfonic.claim"
REHYDRATE: Final = "symfonic.rehydrate"
PUBLISH: Final = "symfonic.publish"
ABANDON: Final = "symfonic.abandon"
ESCALATE: Final = "symfonic.escalate"
"""A step of a pause's escalation chain, applied by a sweep."""
REASSIGN: Final = "symfonic.reassign"
"""An operator's hand-over of a pending pause."""
STORE_PREFIX: Final = "symfonic.store."
"""Every other store transaction: ``symfonic.store.<operation>``."""

# Attributes ---------------------------------------------------------------
SESSION_ID: Final = "symfonic.session_id"
PAUSE_ID: Final = "symfonic.pause_id"
NEXT_PAUSE_ID: Final = "symfonic.next_pause_id"
"""On a resume that paused again: the new pause (``symfonic.pause_id`` is the answered one)."""
AGENT: Final = "symfonic.agent"
PRINCIPAL: Final = "symfonic.principal"
INTERACTION_KIND: Final = "symfonic.interaction.kind"
OUTCOME: Final = "symfonic.outcome"
ERROR_CODE: Final = "symfonic.error.code"
CLAIM_RESULT: Final = "symfonic.claim.result"
RESUMED: Final = "symfonic.resumed"
STORE_OPERATION: Final = "db.operation.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_STATUS: Final = "symfonic.tool.status"
SWEEP_ACTION: Final = "symfonic.sweep.action"
AUDIENCE_FROM: Final = "symfonic.audience.from"
"""The audience a re-addressed pause left (its owner as ``principal:<name>``)."""
AUDIENCE_TO: Final = "symfonic.audience.to"
ESCALATION_STEP: Final = "symfonic.escalation.step"
"""The escalation step applied, counted from 1."""
ESCALATION_AFTER: Final = "symfonic.escalation.after"
"""The step's seconds after the pause was created."""
APPROVALS: Final = "symfonic.approvals"
"""On a vote toward a pause that needs several approvals: how many count after it."""
APPROVALS_REQUIRED: Final = "symfonic.approvals_required"
APPROVAL_DECISION: Final = "symfonic.approval.decision"
"""A counted vote's decision: ``approve``, or ``edit`` (a new proposal)."""
ANSWER_CONTENT: Final = "symfonic.answer.content"
"""Recorded only when the operator opts in (``record_answers``); off by default."""

GEN_AI_OPERATION: Final = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_PROVIDER: Final = "gen_ai.provider.name"
GEN_AI_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_CHAT: Final = "chat"
GEN_AI_EXECUTE_TOOL: Final = "execute_tool"

# Outcomes and claim results ----------------------------------------------
COMPLETE: Final = "complete"
PAUSED: Final = "paused"
FAILED: Final = "failed"
REFUSED: Final = "refused"
WON: Final = "won"
LOST: Final = "lost"
# A quorum approval counted, the pause still waiting for more: neither won nor lost.
VOTED: Final = "voted"
REPLAY: Final = "replay"

# Metrics -------------------------------------------------------------------
PAUSES_PENDING: Final = "symfonic.pauses.pending"
TIME_TO_ANSWER: Final = "symfonic.pause.time_to_answer"
RESUMES: Final = "symfonic.resumes"
APPROVALS_COUNTED: Final = "symfonic.approvals.counted"
TURN_DURATION: Final = "symfonic.turn.duration"
MODEL_CALL_DURATION: Final = "gen_ai.client.operation.duration"
TOKEN_USAGE: Final = "gen_ai.client.token.usage"
TOOL_CALL_DURATION: Final = "symfonic.tool.duration"
CLAIM_CONFLICTS: Final = "symfonic.claim.conflicts"
SWEEPER_ACTIONS: Final = "symfonic.sweeper.actions"
STORE_UNAVAILABLE: Final = "symfonic.store.unavailable"
