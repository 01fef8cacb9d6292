"""What the kernel needs of an agent's tools: bind them, find one, and say which calls must wait
for a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.tools import BaseTool

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import PendingInteraction
from symfonic.kernel.tools import Tool


@dataclass(frozen=True)
class UndecidedCall:
    """A call nobody could say was safe to run, nor which person must answer it.

    ``reason`` is the error observation the model reads, in words.
    """

    tool_call_id: str
    reason: str


class RoundTools(Protocol):
    """The tools of one agent, as the kernel's rounds use them."""

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The ordinary tools, by name."""
        ...

    def bindings(self) -> list[BaseTool]:
        """Every tool and interaction, as the model is told of them."""
        ...

    async def interaction_for(
        self, call: Mapping[str, Any], principal: Principal
    ) -> PendingInteraction | UndecidedCall | None:
        """The interaction this call is (the round stops there), an undecided call
        (nothing in the round runs), or ``None`` for an ordinary call.

        ``principal``: the one whose message the turn answers.
        """
        ...
