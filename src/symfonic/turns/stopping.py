"""A first turn that can be stopped at its next step, from outside the task running it, once the
store has already taken its session away.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import anyio

from symfonic.core.contracts.errors import TurnStopped

E = TypeVar("E")
Stop = Callable[[], None]


class TurnStopper:
    """Each step of a turn in its own cancel scope; `stop` cancels the current one.

    Made with `of`, it is the turn's stop among the ones a takeover looks up
    by run id (``running``) until `ended`; a background run driving the turn
    puts its own there once started, which stops the turn whole, and is left be.
    """

    def __init__(self) -> None:
        self.stopped = False
        self._scope: anyio.CancelScope | None = None
        self._running: dict[str, Stop] | None = None
        self._run_id = ""

    @classmethod
    def of(cls, running: dict[str, Stop], run_id: str) -> TurnStopper:
        """A stopper for the run ``run_id``, found in ``running`` until it has ended."""
        stopper = cls()
        stopper._running, stopper._run_id = running, run_id
        running[run_id] = stopper.stop
        return stopper

    def ended(self) -> None:
        """The turn has ended: no longer found in ``running`` (unless another's stop is)."""
        if self._running is not None and self._running.get(self._run_id) == self.stop:
            del self._running[self._run_id]

    def __repr__(self) -> str:
        return f"TurnStopper(stopped={self.stopped})"

    def stop(self) -> None:
        """Stop the turn at its next step (the one under way, if any)."""
        self.stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def step(self, events: AsyncIterator[E]) -> E | None:
        """The turn's next event, ``None`` at its end; raises ``TurnStopped`` once stopped."""
        if self.stopped:
            raise TurnStopped
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                return await anext(events)
            except StopAsyncIteration:
                return None
            finally:
                self._scope = None
        raise TurnStopped
