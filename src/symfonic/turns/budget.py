"""Budgets: admitted before the claim, so a refused budget never spends the token, then enforced
by an event guard that stops a turn over its plan.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from symfonic.core.contracts.errors import BudgetExhausted, BudgetRefused
from symfonic.core.contracts.types import RawEvent, ToolCallEvent
from symfonic.kernel.limits import Limits


@dataclass(frozen=True)
class IssuerScope:
    """Whose turn a pause belongs to: the session's owner and its agent."""

    owner: str
    agent: str


@dataclass
class Quota:
    """At most ``turns`` admitted turns per principal in any ``per_seconds`` window.

    Kept in the worker's memory, so with several workers each enforces its own
    window; ``clock`` is injectable so tests need not sleep.
    """

    turns: int
    per_seconds: float
    clock: Callable[[], float] = time.monotonic
    _admitted: dict[str, deque[float]] = field(default_factory=dict, repr=False)

    def admit(self, principal: str) -> None:
        now = self.clock()
        window = self._admitted.setdefault(principal, deque())
        while window and window[0] <= now - self.per_seconds:
            window.popleft()
        if len(window) >= self.turns:
            retry_after = max(1, math.ceil(window[0] + self.per_seconds - now))
            raise BudgetRefused(
                f"{principal} has used its {self.turns} turns per {self.per_seconds:g}s; "
                f"try again in {retry_after}s",
                retry_after=retry_after,
            )
        window.append(now)


class BudgetedAgent(Protocol):
    limits: Limits
    quota: Quota | None


class EventGuard:
    """Stops a turn whose events exceed its plan."""

    def __init__(self, plan: Limits) -> None:
        self._plan = plan
        self.tool_calls = 0

    def __call__(self, event: RawEvent) -> None:
        if isinstance(event, ToolCallEvent):
            self.tool_calls += 1
            if self.tool_calls > self._plan.max_tool_calls:
                raise BudgetExhausted(
                    f"the turn asked for more than {self._plan.max_tool_calls} tool calls"
                )


@dataclass(frozen=True)
class AdmittedBudget:
    prepared_plan: Limits
    event_guard: EventGuard


def admitted(plan: Limits) -> AdmittedBudget:
    """A turn admitted already (a queued message, counted when it was queued)."""
    return AdmittedBudget(prepared_plan=plan, event_guard=EventGuard(plan))


def admit_resume_budget(agent: BudgetedAgent, issuer_scope: IssuerScope) -> AdmittedBudget:
    """Admit one turn for ``issuer_scope``'s owner, or raise ``BudgetRefused``."""
    if agent.quota is not None:
        agent.quota.admit(issuer_scope.owner)
    plan: Limits = agent.limits
    return AdmittedBudget(prepared_plan=plan, event_guard=EventGuard(plan))
