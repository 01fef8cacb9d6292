"""A turn (or an AG-UI run) whose first event has been pulled, so every refusal has
raised before a response exists and can be a plain JSON error with its own status."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Generic, TypeVar

from symfonic.turns.outcomes import first_event

E = TypeVar("E")


class PrimedTurn(Generic[E]):
    """The first event, and the rest of the stream; ``aclose`` ends the turn."""

    def __init__(self, first: E, rest: AsyncGenerator[E, None]) -> None:
        self.first = first
        self._rest = rest

    @classmethod
    async def start(cls, events: AsyncGenerator[E, None]) -> PrimedTurn[E]:
        """Pull the first event; refusals raise here and the stream is closed."""
        return cls(await first_event(events), events)

    async def __aiter__(self) -> AsyncGenerator[E, None]:
        yield self.first
        async for event in self._rest:
            yield event

    async def aclose(self) -> None:
        await self._rest.aclose()
