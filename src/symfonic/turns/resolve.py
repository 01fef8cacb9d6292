"""A resume's first step: the token verified, once, whichever transport received it, and the
pause it names found, from the agent's kept record or the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from symfonic.capabilities.human.tokens import TokenSigner
from symfonic.core.contracts.errors import PauseNotFound
from symfonic.core.contracts.store import PauseRecord, Store
from symfonic.turns.settlement import Settlement


@dataclass(frozen=True)
class ResolvedPause:
    """A verified token and the pause it names, as this request found it."""

    token: str
    pause: PauseRecord


def pause_id_of(signer: TokenSigner, token: str) -> str:
    """The id the token was minted for; a token that does not verify names no pause."""
    pause_id = signer.verify(token)
    if pause_id is None:
        raise PauseNotFound("the token does not name a pause")
    return pause_id


async def resolve(settlement: Settlement, token: str, now: datetime) -> ResolvedPause:
    """The token's pause: the record this agent kept while it is unexpired, else the row."""
    pause_id = pause_id_of(settlement.signer, token)
    kept = settlement.recent.take(pause_id)
    if kept is not None and kept.answerable(now):
        return ResolvedPause(token, kept)
    return ResolvedPause(token, await _row(settlement.store, pause_id))


async def resolve_row(signer: TokenSigner, store: Store, token: str) -> ResolvedPause:
    """The token's pause as its row says now, for a transport that routes or decides on it.

    The transport drops what its agent kept of the pause: it is not needed."""
    return ResolvedPause(token, await _row(store, pause_id_of(signer, token)))


async def _row(store: Store, pause_id: str) -> PauseRecord:
    pause = await store.get_pause(pause_id)
    if pause is None:
        raise PauseNotFound("the token does not name a pause")
    return pause
