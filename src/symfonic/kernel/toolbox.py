"""What the kernel needs of an agent's tools: bind them, find one, spot an interaction.

The kernel runs rounds and knows nothing of people: which calls must wait for
one (interactions, approvals) is decided by the tool box it is given, which the
human capabilities build (:class:`symfonic.capabilities.human.toolbox.ToolBox`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from langchain_core.tools import BaseTool

from symfonic.core.contracts.types import PendingInteraction
from symfonic.kernel.tools import Tool


class RoundTools(Protocol):
    """The tools of one agent, as the kernel's rounds use them."""

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The ordinary tools, by name."""
        ...

    def bindings(self) -> list[BaseTool]:
        """Every tool and interaction, as the model is told of them."""
        ...

    def interaction_for(self, call: Mapping[str, Any]) -> PendingInteraction | None:
        """The interaction this call is (the round stops there), or ``None``."""
        ...
