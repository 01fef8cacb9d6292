"""symfonic: agent turns that pause for a person and resume exactly once, anywhere."""

from symfonic.agent.agent import SymfonicAgent
from symfonic.capabilities.human.approval_rules import needs_approval
from symfonic.capabilities.human.escalation import escalation
from symfonic.capabilities.human.interactions import interaction
from symfonic.core.contracts.errors import (
    BudgetRefused,
    ConfigurationError,
    InvalidAnswer,
    OwnRequest,
    PauseAbandoned,
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseExpired,
    PauseForbidden,
    PauseNotFound,
    RequestError,
    RevisionConflict,
    SessionBusy,
    SessionNotFound,
    SessionPaused,
    StaleQuestion,
    SymfonicError,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import PauseInfo, TurnResult
from symfonic.kernel.limits import Limits
from symfonic.server.service.webhooks import Webhook, WebhookSettings
from symfonic.turns.budget import Quota

__all__ = [
    "BudgetRefused",
    "ConfigurationError",
    "InvalidAnswer",
    "Limits",
    "OwnRequest",
    "PauseAbandoned",
    "PauseAlreadyAnswered",
    "PauseAlreadyClaimed",
    "PauseExpired",
    "PauseForbidden",
    "PauseInfo",
    "PauseNotFound",
    "Principal",
    "Quota",
    "RequestError",
    "RevisionConflict",
    "SessionBusy",
    "SessionNotFound",
    "SessionPaused",
    "StaleQuestion",
    "SymfonicAgent",
    "SymfonicError",
    "TurnResult",
    "Webhook",
    "WebhookSettings",
    "escalation",
    "interaction",
    "needs_approval",
]
