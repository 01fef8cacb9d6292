"""Who is calling, and which pauses they may answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from symfonic.core.contracts.store import PauseRecord

WILDCARD = "*"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. The scope ``*`` may answer any pause."""

    name: str
    scopes: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, principal: Principal | str) -> Principal:
        return principal if isinstance(principal, Principal) else cls(principal)

    def may_answer(self, pause: PauseRecord) -> bool:
        """The owner answers an unaddressed pause; an audience scope answers its own."""
        if WILDCARD in self.scopes:
            return True
        if pause.audience is None:
            return pause.principal == self.name
        return pause.audience in self.scopes
