"""A pending pause handed to another audience, by its escalation chain or by an operator.

The pause stays ``pending`` and keeps its token: only who may answer it
changes. Each re-addressing is one conditional write on the pause's current
step or state, so two workers never apply one twice, and it is recorded as a
change of the pause (the live feed, a webhook) in the same transaction.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


def kept_owner(principal: str) -> str:
    """How an owner who keeps access to a re-addressed pause is named among its audiences."""
    return f"principal:{principal}"


class ReaddressKind(enum.StrEnum):
    ESCALATED = "escalated"
    REASSIGNED = "reassigned"


@dataclass(frozen=True)
class Readdressing:
    """A pause handed to another audience: by its escalation chain, or by an operator.

    ``previous``: the audience before (``None``: its owner); ``by`` the operator
    and ``reason`` their words, for a reassignment; ``after`` the step's seconds,
    for an escalation.
    """

    kind: ReaddressKind
    previous: str | None
    audience: str
    at: datetime
    by: str | None = None
    reason: str | None = None
    after: float | None = None


@dataclass(frozen=True)
class Reassignment:
    """An operator's request to hand a pending pause to ``audience``.

    ``keep_previous``: whether the audience before keeps access (it does not, by
    default: the operator hands the question over).
    """

    pause_id: str
    audience: str
    by: str
    reason: str
    at: datetime
    keep_previous: bool = False


class PauseAddressing(Protocol):
    """Who a pending pause is addressed to, changed once per step or request."""

    async def escalate_due(self, now: datetime) -> int:
        """Apply every escalation step due at ``now`` to the unexpired pending pauses.

        Each step is one conditional update on the pause's current step, with its
        change and webhooks, in one transaction: any number of workers may call
        this at once and each step is applied once. How many steps were applied.
        """
        ...

    async def reassign_pause(self, reassignment: Reassignment) -> bool:
        """Hand a pending, unexpired pause to another audience, in one transaction
        with its change and webhooks; ``False`` when the pause is not pending."""
        ...
