"""What exactly a person approved: the SHA-256 of a tool call's name and arguments as RFC 8785
canonical JSON. Arguments JCS cannot hold exactly (an integer beyond 2**53) have no digest,
since rounding would give two calls one digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785


def args_digest(tool: str, args: Mapping[str, Any]) -> str | None:
    """The hex SHA-256 of the call's JCS form, or ``None`` when JCS cannot hold it."""
    try:
        canonical = rfc8785.dumps({"tool": tool, "args": dict(args)})
    except (rfc8785.CanonicalizationError, TypeError):
        return None
    return hashlib.sha256(canonical).hexdigest()
