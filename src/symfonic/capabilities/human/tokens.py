"""Pause tokens: the single-use capability to answer one pause.

A token is the pause id followed by an HMAC-SHA256 of it under the database's
secret (256 bits of secret material), so any worker of that database can verify
it and none can forge one. Verification is constant-time. A token is
deterministic per pause, which is what lets an identical replay be answered
with the same token again; it is single-use because the pause row is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import uuid

PREFIX = "sfp_"
_ID_BYTES = 16
_MAC_BYTES = 32


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
        if not isinstance(token, str) or not token.startswith(PREFIX) or len(token) > 128:
            return None
        encoded = token[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(raw) != _ID_BYTES + _MAC_BYTES:
            return None
        pause_bytes, mac = raw[:_ID_BYTES], raw[_ID_BYTES:]
        if not hmac.compare_digest(mac, self._mac(pause_bytes)):
            return None
        return uuid.UUID(bytes=pause_bytes).hex


def new_pause_id() -> str:
    return uuid.uuid4().hex
