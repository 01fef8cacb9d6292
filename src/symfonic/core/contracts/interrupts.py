"""Taking a busy session over: the turn that holds it cancelled, the new one begun.

A message sent with ``on_busy="interrupt"`` or ``"rollback"`` cancels the turn
holding its session, as a cancel of its run would (it publishes nothing; a
resume's claimed pause is ``abandoned``), and begins its own turn, in one
transaction (:meth:`TurnInterrupts.interrupt_turn`): no other turn can come
between the two, and a message refused for any other reason (not its sender's
session, a stale ``base_revision``, a pending pause it would refuse) cancels
nothing. The turn it cancelled, if its run was kept, ends ``cancelled`` with
an ``error`` event (``run_cancelled``), which stops it on the worker running
it; with ``forget`` (a rollback), its run and kept events are deleted instead.
A first turn that kept no run (an attached one) is given one in that state,
with that one event, so the worker streaming it hears of it and stops it too.
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
        cancelled, if :class:`RunRequest` refuses it for any other reason.

        ``forget``: delete the cancelled turn's run and kept events instead of
        ending it ``cancelled``.
        """
        ...
