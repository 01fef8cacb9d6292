"""A listing's cursor: the position of the last pause a page listed, as an opaque string that
reveals nothing the caller did not see and is read strictly.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime

from symfonic.core.contracts.errors import InvalidCursor
from symfonic.core.contracts.store import PausePosition

MAX_CURSOR_CHARS = 200
_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_SEPARATOR = "|"


def encode_cursor(position: PausePosition) -> str:
    text = f"{position.created_at.isoformat()}{_SEPARATOR}{position.pause_id}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _position(text: str) -> PausePosition | None:
    at, separator, pause_id = text.partition(_SEPARATOR)
    if not separator or not _ID.fullmatch(pause_id):
        return None
    try:
        created_at = datetime.fromisoformat(at)
    except ValueError:
        return None
    return None if created_at.tzinfo is None else PausePosition(created_at, pause_id)


def decode_cursor(cursor: str) -> PausePosition:
    """The position ``cursor`` names; raises `InvalidCursor` for anything else."""
    refusal = InvalidCursor(
        "this cursor is not one a listing handed out; "
        "start again without a cursor and follow each page's next_cursor"
    )
    if len(cursor) > MAX_CURSOR_CHARS or not re.fullmatch(r"[A-Za-z0-9_-]+", cursor):
        raise refusal
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position = _position(raw.decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise refusal from error
    if position is None:
        raise refusal
    return position
