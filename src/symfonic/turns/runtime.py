"""What a turn's flow needs of the agent running it, and nothing more: the flows sit
below `SymfonicAgent`, so the agent imports them without their importing it back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from symfonic.capabilities.human.toolbox import ToolBox
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord, Store
from symfonic.kernel.limits import Limits
from symfonic.kernel.loop import Kernel
from symfonic.turns.budget import Quota
from symfonic.turns.settlement import Settlement


class TurnRuntime(Protocol):
    """An opened agent: its store and signer, its model loop, its settings."""

    name: str
    limits: Limits
    claim_lease: float
    run_lease: float
    quota: Quota | None
    clock: Callable[[], datetime]
    toolbox: ToolBox
    """Its tools and their approval rules: an edit's question is worded by its rule."""

    @property
    def store(self) -> Store: ...

    @property
    def settlement(self) -> Settlement: ...

    def kernel(
        self,
        session_id: str,
        plan: Limits | None = None,
        *,
        principal: Principal | None = None,
    ) -> Kernel:
        """The model loop for one turn of ``session_id``, answering ``principal``'s message."""
        ...

    def context(self, history: Sequence[BaseMessage]) -> list[BaseMessage]:
        """What the model sees before the turn: the instructions, then the history."""
        ...

    async def create_session(
        self,
        principal: Principal | str = "local",
        metadata: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
    ) -> str: ...

    def token_for(self, pause: PauseRecord) -> str:
        """The pause's token, minted again from its id."""
        ...
