"""Who is calling, and which pauses they may answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from symfonic.core.contracts.readdressing import kept_owner
from symfonic.core.contracts.store import PauseRecord

WILDCARD = "*"
# The scope of whoever runs the service: sees the webhook outbox, reassigns pauses.
OPERATOR = "operator"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. The scope ``*`` may answer any pause."""

    name: str
    scopes: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, principal: Principal | str) -> Principal:
        return principal if isinstance(principal, Principal) else cls(principal)

    @property
    def is_operator(self) -> bool:
        return OPERATOR in self.scopes or WILDCARD in self.scopes

    def may_answer(self, pause: PauseRecord) -> bool:
        """The owner answers an unaddressed pause; an audience scope answers its own.

        An audience a re-addressed pause kept (the owner, or a scope) still answers it.
        """
        if WILDCARD in self.scopes:
            return True
        if pause.audience is None:
            return pause.principal == self.name
        if pause.audience in self.scopes:
            return True
        kept = pause.kept_audiences
        return kept_owner(self.name) in kept or any(scope in kept for scope in self.scopes)
