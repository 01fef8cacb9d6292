"""Pause tokens: the single-use capability to answer one pause.

A token is the pause id followed by an HMAC-SHA256 of it under the database's
secret (256 bits of secret material), so any worker of that database can verify
it and none can forge one. Verification is constant-time. A token is
deterministic per pause, which is what lets an identical replay be answered
with the same token again; it is single-use because the pause row is.

Each token has exactly one spelling: the prefix and 64 characters of unpadded
URL-safe base64 (48 bytes fill them with no spare bits). Anything else -- padding,
characters a lenient decoder would skip, a trailing newline -- is refused like
a token that does not verify, so no two strings answer as the same token.
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
