"""Approvals that need several people: the role of the storage port a quorum vote goes through.

A pause that needs N approvals stays ``pending`` while they come in. Each
approval is one transaction that takes the pause row's lock first, so votes on
one pause are counted one after another on any number of workers, and then
records the vote keyed by ``(pause_id, principal)``: the same principal cannot
be counted twice. The vote that brings the count to N claims the pause in that
same transaction, with the same conditional statement as any claim, so the
gated call runs once, on the worker that received that vote. A vote that finds
the pause no longer pending and unexpired writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from symfonic.core.contracts.pauses import Claim, ClaimedPause, PauseRecord
from symfonic.core.contracts.types import ApprovalVote


@dataclass(frozen=True)
class VoteOutcome:
    """What one approval did: exactly one field is set.

    ``counted``: the pause after the vote, still pending with fewer approvals
    than it needs. ``claimed``: the vote completed the quorum and claimed the
    pause. ``already``: this principal's earlier approval; nothing was written.
    """

    counted: PauseRecord | None = None
    claimed: ClaimedPause | None = None
    already: ApprovalVote | None = None


class ApprovalVotes(Protocol):
    """Approvals of a pause that needs several, counted so that no race loses one."""

    async def vote_pause(self, claim: Claim) -> VoteOutcome | None:
        """Record ``claim.principal``'s approval of a pending, unexpired pause.

        One transaction: the pause row locked, the vote recorded, and, when it is
        the last approval needed, the claim ``claim`` describes made. ``None``
        when the pause is no longer pending and unexpired: nothing is written.
        """
        ...
