"""Approvals that need several people: the storage role a quorum vote goes through.
Each vote is one transaction under the pause row's lock, counted once per principal and
only toward the arguments its approver was shown; the vote that completes the quorum
claims the pause in that transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from symfonic.core.contracts.pauses import CheckpointRecord, Claim, ClaimedPause, PauseRecord


@dataclass(frozen=True)
class Proposal:
    """An edit of a call that needs several approvals: the arguments it now proposes.

    ``checkpoint``: the pause's checkpoint with the edited call in its
    interaction; ``args_digest``: the edited call's digest; ``query``: the question
    worded from the edited arguments, the pause's headline in every view from then on.
    """

    checkpoint: CheckpointRecord
    args_digest: str
    query: str


@dataclass(frozen=True)
class Ballot:
    """One approval as the store counts it.

    ``claim``: who approves, when, and the claim the vote makes if it completes
    the quorum. ``asked_digest``: the digest of the arguments the approver was
    shown (the pause's as the request read it). ``proposal``: for an edit, the
    new arguments it proposes.
    """

    claim: Claim
    asked_digest: str | None
    proposal: Proposal | None = None


@dataclass(frozen=True)
class VoteOutcome:
    """What one approval did, and the pause as it left it.

    ``pause``: the pause after the vote, its approvals and digest as they now
    stand. ``claimed``: the vote completed the quorum and claimed the pause.
    ``already``: this principal was counted already, and nothing was written.
    ``stale``: the arguments were edited since the approver read them, and
    nothing was written.
    """

    pause: PauseRecord
    claimed: ClaimedPause | None = None
    already: bool = False
    stale: bool = False


class ApprovalVotes(Protocol):
    """Approvals of a pause that needs several, counted so that no race loses one."""

    async def vote_pause(self, ballot: Ballot) -> VoteOutcome | None:
        """Record ``ballot``'s approval of a pending, unexpired pause.

        One transaction: the pause row locked, its digest compared with the one
        the approver was shown, the vote (or the edit's new proposal) recorded,
        and, when it is the last approval needed, the claim made. ``None`` when
        the pause is no longer pending and unexpired: nothing is written.
        """
        ...
