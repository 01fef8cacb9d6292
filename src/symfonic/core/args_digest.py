"""What exactly a person approved: one digest of a tool call's name and arguments.

The digest is SHA-256, in hex, of ``{"tool": name, "args": args}`` as RFC 8785
canonical JSON (JCS): the same call gives the same digest in any language that
implements JCS, whatever order its keys came in or however its numbers were
written. An approver's client sends back the digest it showed; an answer whose
digest is not the pause's was given to another question and is refused.

JCS admits only numbers a double holds exactly. A call whose arguments hold an
integer beyond 2**53 (or a value JSON cannot carry) has no digest: rounding it
would give two different calls one digest, which is worse than none.
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
