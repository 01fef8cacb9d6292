"""Why a request's body could not be read as JSON, in words: 400 with the line and column, or
415 naming the header. A body of another type is never read as JSON, so no site's form can call
the API with the inbox cookie.
"""

from __future__ import annotations

import email.message
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request

BAD_REQUEST, NOT_JSON = "bad_request", "unsupported_media_type"
REFUSALS = {BAD_REQUEST: 400, NOT_JSON: 415}

# What the json module says, as a person would; anything else is passed on lower-cased.
_SAID = {
    "Expecting value": "a value was expected",
    "Expecting property name enclosed in double quotes": "a name in double quotes was expected",
    "Expecting ':' delimiter": "a ':' was expected",
    "Expecting ',' delimiter": "a ',' was expected",
    "Unterminated string starting at": "a string starts here and is never closed",
    "Invalid control character at": "a string holds a raw control character (escape it)",
    "Extra data": "more follows the end of the JSON value",
}


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is one FastAPI reads as JSON (``*/json``, ``*+json``)."""
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def where_it_broke(body: bytes, position: int, problem: str) -> str:
    """``problem`` at character ``position`` of ``body``, as a line and a column."""
    text = body.decode("utf-8", errors="replace")
    if position >= len(text.rstrip()):
        return f"the body is not valid JSON: it ends before the JSON value does ({_said(problem)})"
    line = text.count("\n", 0, position) + 1
    column = position - text.rfind("\n", 0, position)
    return f"the body is not valid JSON: at line {line}, column {column}, {_said(problem)}"


def _said(problem: str) -> str:
    return _SAID.get(problem, problem[:1].lower() + problem[1:])


async def body_refusal(
    request: Request, errors: Sequence[Mapping[str, Any]]
) -> tuple[int, str, str] | None:
    """(status, code, message) when the body itself could not be read as JSON, else ``None``."""
    for error in errors:
        location = tuple(error.get("loc", ()))
        if error.get("type") == "json_invalid" and len(location) == 2:
            problem = str((error.get("ctx") or {}).get("error", "it cannot be parsed"))
            message = where_it_broke(await request.body(), int(location[1]), problem)
            return REFUSALS[BAD_REQUEST], BAD_REQUEST, message
    content_type = request.headers.get("content-type")
    about_the_body = any(tuple(error.get("loc", ()))[:1] == ("body",) for error in errors)
    if about_the_body and not is_json(content_type) and await request.body():
        sent = f"this request's was {content_type}" if content_type else "this request sent none"
        message = f"the body must be JSON, sent with Content-Type: application/json ({sent})"
        return REFUSALS[NOT_JSON], NOT_JSON, message
    return None
