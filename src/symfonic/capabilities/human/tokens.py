"""Pause tokens: the pause id and an HMAC-SHA256 of it under the database's secret, verified in
constant time. Each token has exactly one spelling; any other is refused like a forgery.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import uuid

PREFIX = "sfp_"
_ID_BYTES = 16
_MAC_BYTES = 32
# 48 bytes are 64 base64 characters exactly: no padding, no spare bits.
_LENGTH = (_ID_BYTES + _MAC_BYTES) * 4 // 3
_SPELLING = re.compile(rf"{PREFIX}[A-Za-z0-9_-]{{{_LENGTH}}}")


class TokenSigner:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the token secret must be at least 128 bits")
        self._secret = secret

    def __repr__(self) -> str:
        return "TokenSigner(secret=***)"

    def _mac(self, pause_bytes: bytes) -> bytes:
        return hmac.new(self._secret, b"symfonic-pause:" + pause_bytes, hashlib.sha256).digest()

    def mint(self, pause_id: str) -> str:
        raw = uuid.UUID(hex=pause_id).bytes
        return PREFIX + base64.urlsafe_b64encode(raw + self._mac(raw)).decode().rstrip("=")

    def verify(self, token: object) -> str | None:
        """The pause id the token names, or ``None`` if it does not verify."""
        if not isinstance(token, str) or _SPELLING.fullmatch(token) is None:
            return None
        pause_bytes = base64.urlsafe_b64decode(token[len(PREFIX) :])[:_ID_BYTES]
        pause_id = uuid.UUID(bytes=pause_bytes).hex
        # The whole spelling against the one this pause's token has, not just the MAC.
        if not hmac.compare_digest(token.encode(), self.mint(pause_id).encode()):
            return None
        return pause_id


def new_pause_id() -> str:
    return uuid.uuid4().hex
