"""API keys to principals, checked in constant time; keys never appear in a repr or log.

`SYMFONIC_API_KEYS="alice=key1,carol=key3:approver+auditor"`; with no keys every caller
is `local`.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.principal import WILDCARD, Principal

LOCAL = Principal("local", frozenset({WILDCARD}))


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    principal: Principal


class Authenticator:
    def __init__(self, entries: list[tuple[str, str, frozenset[str]]]) -> None:
        self._entries = [
            _Entry(_digest(key), Principal(name, scopes)) for name, key, scopes in entries
        ]

    def __repr__(self) -> str:
        return f"Authenticator(principals={[e.principal.name for e in self._entries]!r})"

    @property
    def principal_names(self) -> list[str]:
        return [entry.principal.name for entry in self._entries]

    @property
    def open(self) -> bool:
        """No keys configured: everyone is ``local``."""
        return not self._entries

    @classmethod
    def from_spec(cls, spec: str | None) -> Authenticator:
        entries: list[tuple[str, str, frozenset[str]]] = []
        for raw in (spec or "").split(","):
            item = raw.strip()
            if not item:
                continue
            name, sep, rest = item.partition("=")
            key, _, scopes = rest.partition(":")
            if not sep or not name.strip() or not key:
                raise ConfigurationError(
                    "SYMFONIC_API_KEYS entries are name=key or name=key:scope; one entry "
                    f"for {name.strip() or '?'!r} is malformed"
                )
            scope_set = frozenset(s for s in scopes.split("+") if s)
            entries.append((name.strip(), key, scope_set))
        if len({key for _, key, _ in entries}) != len(entries):
            raise ConfigurationError("two principals in SYMFONIC_API_KEYS share one key")
        return cls(entries)

    def principal_of_key(self, key: str) -> Principal | None:
        """The principal holding ``key`` (compared in constant time), or ``None``."""
        if self.open:
            return LOCAL
        if not key.strip():
            return None
        digest = _digest(key.strip())
        found: Principal | None = None
        # Compare against every entry so the time taken does not say which matched.
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, digest):
                found = entry.principal
        return found

    def key_digest_of(self, name: str) -> tuple[Principal, bytes] | None:
        """The principal called ``name`` and the digest of its current key, if any.

        A signed-in browser session is bound to this digest, so changing a
        principal's key (or removing it) ends every session it had.
        """
        for entry in self._entries:
            if entry.principal.name == name:
                return entry.principal, entry.digest
        return None
