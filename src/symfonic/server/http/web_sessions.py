"""Browser sessions for the inbox: an HMAC-signed cookie that names a principal and never holds
a key, accepted by any worker of the database. Cookie-authenticated writes must carry the
session's CSRF token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from symfonic.core.contracts.principal import Principal
from symfonic.server.http.auth import Authenticator

COOKIE_NAME = "symfonic_inbox"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600
_PURPOSE = b"symfonic-inbox-session:"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class WebSession:
    """A verified session: who it is, its CSRF token, and when it ends (Unix seconds)."""

    session_id: str
    principal: Principal
    csrf_token: str
    expires_at: int


class WebSessions:
    """Issues and verifies inbox session cookies under one secret."""

    def __init__(self, secret: bytes, authenticator: Authenticator) -> None:
        self._key = hmac.new(secret, _PURPOSE, hashlib.sha256).digest()
        self._authenticator = authenticator

    def __repr__(self) -> str:
        return "WebSessions(key=***)"

    def _mac(self, purpose: bytes, payload: bytes) -> bytes:
        return hmac.new(self._key, purpose + payload, hashlib.sha256).digest()

    def csrf_token(self, session_id: str) -> str:
        return _b64(self._mac(b"csrf:", session_id.encode()))

    def issue(self, principal: Principal, *, now: float | None = None) -> tuple[str, WebSession]:
        """A new session for ``principal``: the cookie value and the session it names."""
        found = self._authenticator.key_digest_of(principal.name)
        if found is None:
            raise ValueError("only a principal with an API key signs in")
        _, digest = found
        session_id = secrets.token_urlsafe(24)
        expires_at = int(now if now is not None else time.time()) + SESSION_SECONDS
        payload = ".".join(
            [
                session_id,
                _b64(principal.name.encode()),
                str(expires_at),
                _b64(self._mac(b"key:", digest)),
            ]
        )
        cookie = payload + "." + _b64(self._mac(b"cookie:", payload.encode()))
        return cookie, WebSession(session_id, principal, self.csrf_token(session_id), expires_at)

    def verify(self, cookie: str | None, *, now: float | None = None) -> WebSession | None:
        """The session a cookie names, or ``None``: forged, expired, or its key changed."""
        if not cookie or len(cookie) > 1024:
            return None
        payload, _, mac = cookie.rpartition(".")
        parts = payload.split(".")
        if len(parts) != 4:
            return None
        try:
            given = _unb64(mac)
            session_id, name_b64, expires_text, key_mark = parts
            name = _unb64(name_b64).decode()
            expires_at = int(expires_text)
            mark = _unb64(key_mark)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return None
        if not hmac.compare_digest(given, self._mac(b"cookie:", payload.encode())):
            return None
        if expires_at <= (now if now is not None else time.time()):
            return None
        found = self._authenticator.key_digest_of(name)
        if found is None:
            return None
        principal, digest = found
        if not hmac.compare_digest(mark, self._mac(b"key:", digest)):
            return None
        return WebSession(session_id, principal, self.csrf_token(session_id), expires_at)

    def csrf_matches(self, session: WebSession, sent: str | None) -> bool:
        return sent is not None and hmac.compare_digest(sent.encode(), session.csrf_token.encode())
