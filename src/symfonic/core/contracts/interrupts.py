"""Taking a busy session over: the turn holding it cancelled and the new one begun in one
transaction, so no other turn comes between them and a refused message cancels nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from symfonic.core.contracts.sessions import RunRequest, RunStart


@dataclass(frozen=True)
class Interrupted:
    """The new turn's hold, and what it cancelled: the run that held the session (a
    first turn's run id, or a resume's claim id) and the pause it abandoned."""

    start: RunStart
    cancelled_run: str | None = None
    abandoned_pause: str | None = None


class TurnInterrupts(Protocol):
    """Cancelling the turn that holds a session and beginning another, at once."""

    async def interrupt_turn(self, request: RunRequest, *, forget: bool) -> Interrupted | None:
        """Cancel the turn holding ``request``'s session, if one does, and mark
        ``request``'s turn running, in one transaction; ``None``, with nothing
        cancelled, if `RunRequest` refuses it for any other reason.

        ``forget``: delete the cancelled turn's run and kept events instead of
        ending it ``cancelled``.
        """
        ...
