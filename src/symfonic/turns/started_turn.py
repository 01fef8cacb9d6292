"""A first turn's run marker, renewed while the turn runs, and the one write the turn
ends in: its pause, its publish, or the marker cleared with the failure it ended in."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import anyio

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.sessions import RunRenewal
from symfonic.core.contracts.types import KernelResult, TurnPausedEvent
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.turns.budget import IssuerScope
from symfonic.turns.settlement import Settlement, answer_of_result

logger = logging.getLogger("symfonic")


class StartedTurn:
    """A turn holding its session's run marker, until one write ends it."""

    def __init__(
        self,
        settlement: Settlement,
        session_id: str,
        run_id: str,
        scope: IssuerScope,
        base_revision: int,
        principal: Principal | None,
        *,
        parent_session_id: str | None = None,
    ) -> None:
        """``principal``: whose message the turn answers, kept with its pause.

        ``parent_session_id``: for a delegate's turn, the session that called it."""
        self._settlement = settlement
        self.session_id = session_id
        self.run_id = run_id
        self._scope = scope
        self._base_revision = base_revision
        self._principal = principal
        self._parent_session_id = parent_session_id
        self.ended = False

    async def pause(self, result: KernelResult, *, now: datetime) -> TurnPausedEvent:
        """Record the turn's pause, asked at ``now``, with its checkpoint; its frame."""
        event = self._settlement.paused_event(result, now=now)
        await self._settlement.record_pause(
            self.session_id,
            self._scope,
            event,
            result,
            self._base_revision,
            run_id=self.run_id,
            principal=self._principal,
            parent_session_id=self._parent_session_id,
        )
        self.ended = True
        return event

    async def publish(self, result: KernelResult) -> tuple[str, int]:
        """Publish the turn's answer (``UnusableFinal``: none); the answer and new revision."""
        answer = answer_of_result(result)
        revision = await self._settlement.publish_turn(
            self.session_id, self._base_revision, result.messages, self.run_id
        )
        self.ended = True
        return answer, revision

    async def end(self, failure: FailedTurn | None = None) -> None:
        """Clear the run marker of a turn that neither published nor paused; shielded.

        Never raises: a clear that meets an outage is left to the store's next
        sweep after it is back.
        """
        if self.ended:
            return
        self.ended = True
        with anyio.CancelScope(shield=True):
            try:
                await self._settlement.end_run(self.session_id, self.run_id, failure)
            except Exception:
                logger.warning(
                    "could not clear a finished turn's run marker (if the store was out "
                    "of reach, its next sweep after it is back clears it)",
                    exc_info=True,
                )


class MarkerLease:
    """A live first turn's run marker, renewed once a third of its lease has passed."""

    def __init__(
        self,
        store: RunRenewal,
        session_id: str,
        run_id: str,
        *,
        seconds: float,
        clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._run_id = run_id
        self._length = timedelta(seconds=seconds)
        self._clock = clock
        self._renewed = clock()
        self._held = True
        self.interval = seconds / 3

    async def renew_if_due(self) -> None:
        """Renew the marker if a third of its lease has passed; cheap on every event.

        Never raises: a renewal that fails is tried again at the next event or
        beat, while the lease last written still holds. A marker that is no
        longer this run's (the turn ended or was taken over) is not renewed again.
        """
        now = self._clock()
        if not self._held or now - self._renewed < self._length / 3:
            return
        try:
            renewing = self._store.renew_run(self._session_id, self._run_id, now + self._length)
            self._held = await renewing
        except Exception as error:
            logger.warning("could not renew a turn's run marker: %s", error)
            return
        self._renewed = now
