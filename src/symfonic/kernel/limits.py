"""How much one turn may do, first or resumed, counted across its pauses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Per-turn limits.

    The first three count the whole turn: their counters live in the checkpoint, so
    a pause resets nothing.

    Attributes:
        max_tool_rounds: rounds of tool calls before the turn stops at the tool
            limit (and publishes nothing).
        max_model_calls: model calls before the turn stops with the ``budget`` reason.
        max_tokens_per_turn: tokens before the turn stops with the ``budget`` reason.
        max_tool_calls: the event guard's plan for one admitted run (the first run,
            or each resume); a run that asks for more calls is stopped.
    """

    max_tool_rounds: int = 8
    max_model_calls: int = 16
    max_tokens_per_turn: int | None = None
    max_tool_calls: int = 64

    def __post_init__(self) -> None:
        for name in ("max_tool_rounds", "max_model_calls", "max_tool_calls"):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be at least 1")
        if self.max_tokens_per_turn is not None and self.max_tokens_per_turn < 1:
            raise ValueError("Limits.max_tokens_per_turn must be at least 1 or None")
