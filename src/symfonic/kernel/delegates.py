"""What the kernel needs of a delegate: another agent, called like a tool, that may pause.

A round's delegate calls run first, in order, and the first one whose turn pauses is the
round's stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import PendingInteraction


@dataclass(frozen=True)
class DelegatedCall:
    """One delegate call of a round, with what the other agent's turn runs under.

    ``rounds_left``: the tool rounds the calling turn may still use; the
    delegate's rounds count toward them.
    """

    session_id: str
    tool_call_id: str
    args: Mapping[str, Any]
    principal: Principal
    rounds_left: int


@dataclass(frozen=True)
class Delegated:
    """What a delegate's turn came to: an observation, or a pause (``interaction``).

    ``rounds``: the tool rounds the delegate used, counted into the caller's.
    """

    observation: str
    ok: bool
    rounds: int = 0
    interaction: PendingInteraction | None = None


class Delegate(Protocol):
    """Another agent, bound to one turn's store, that answers a call by running a turn."""

    async def delegate(self, call: DelegatedCall) -> Delegated:
        """Run the other agent's turn on the call's task, once."""
        ...
