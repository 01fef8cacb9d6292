"""An operator hands a pending pause to another audience, for every transport: `operator` scope
only, one store transaction with its feed change and webhooks.
"""

from __future__ import annotations

from symfonic.core.contracts.errors import PauseForbidden, PauseNotFound, PauseNotPending
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.readdressing import Reassignment
from symfonic.core.contracts.store import PauseRecord
from symfonic.server.service.host import ServiceHost


async def reassign(
    host: ServiceHost,
    principal: Principal,
    pause_id: str,
    audience: str,
    reason: str,
    *,
    keep_previous: bool = False,
) -> PauseRecord:
    """Hand ``pause_id`` to ``audience``; the pause as it is afterwards."""
    if not principal.is_operator:
        raise PauseForbidden(
            f"{principal.name} may not reassign pauses: that needs the operator scope"
        )
    pause = await host.store.get_pause(pause_id)
    if pause is None or pause.agent not in host.agents or pause.parent_session_id is not None:
        raise PauseNotFound(f"there is no pause {pause_id}")
    agent = host.agent(pause.agent)
    asked = Reassignment(pause_id, audience, principal.name, reason, agent.clock(), keep_previous)
    # Through the pause's agent's store, which logs and traces it, as its other changes.
    if await agent.store.reassign_pause(asked) is None:
        raise PauseNotPending(
            f"pause {pause_id} is no longer waiting for an answer, so it cannot be reassigned"
        )
    reassigned = await host.store.get_pause(pause_id)
    assert reassigned is not None  # a pending pause is never deleted
    return reassigned
