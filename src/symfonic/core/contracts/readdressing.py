"""A pending pause handed to another audience, by escalation or by an operator: one conditional
write, recorded as a change of the pause in the same transaction.
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
class Readdressed:
    """One re-addressing as the store applied it: which pause, whose, and what was done.

    What the store hands back so that telemetry can record it without reading
    the pause again. ``owner`` is the principal whose turn paused (the audience
    ``None`` stands for); ``step`` is the escalation step applied, counted from
    1 (``None`` for a reassignment).
    """

    pause_id: str
    session_id: str
    agent: str
    owner: str
    done: Readdressing
    step: int | None = None

    @property
    def previous(self) -> str:
        """The audience before, with the owner named as among the kept audiences."""
        return self.done.previous or kept_owner(self.owner)


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

    async def escalate_due(self, now: datetime) -> list[Readdressed]:
        """Apply every escalation step due at ``now`` to the unexpired pending pauses.

        Each step is one conditional update on the pause's current step, with its
        change and webhooks, in one transaction: any number of workers may call
        this at once and each step is applied once. The steps this call applied.
        """
        ...

    async def reassign_pause(self, reassignment: Reassignment) -> Readdressed | None:
        """Hand a pending, unexpired pause to another audience, in one transaction
        with its change and webhooks; ``None`` when the pause is not pending."""
        ...
