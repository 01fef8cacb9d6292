"""Every refusal as one JSON shape, `{"error": {"code", "message"}}`, with the SPEC's status.

What the driver said goes to the log, and anything unexpected is a bare `internal`
error.
"""

from __future__ import annotations

import http
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from symfonic.core.contracts.errors import (
    RequestError,
    StoreCannotWrite,
    StoreUnavailable,
    SymfonicError,
)
from symfonic.core.contracts.wire import ErrorDetail
from symfonic.server.transport.json_body import body_refusal

logger = logging.getLogger("symfonic.http")


class ErrorResponse(BaseModel):
    error: ErrorDetail


MAX_VALIDATION_ERRORS = 5
# Seconds a client refused with 503 waits before trying again: a database that
# restarts or fails over is typically back within a second or two.
STORE_RETRY_AFTER = 2
# Codes named after the current RFC 9110 phrase where Python's is older.
_CODES = {413: "content_too_large", 422: "invalid_request"}
# FastAPI's words for a body it could not even decode (not UTF-8, or nested past
# Python's recursion limit), and ours.
_UNREADABLE = "There was an error parsing the body"
_UNREADABLE_SAID = (
    "the body could not be read as JSON: it is not UTF-8 text, or it nests too deeply"
)


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    body = ErrorResponse.model_validate({"error": {"code": code, "message": message}})
    return JSONResponse(body.model_dump(), status_code=status, headers=dict(headers or {}))


def _request_error(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestError)
    headers: dict[str, str] = {}
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if "retry_after" in error.fields:
        headers["Retry-After"] = str(error.fields["retry_after"])
    elif error.status == 503:
        headers["Retry-After"] = str(STORE_RETRY_AFTER)
    return error_response(error.status, error.code, error.message, headers)


def _store_unavailable(_: Request, error: Exception) -> JSONResponse:
    logger.warning("refused a request, the store is out of reach: %s", error)
    message = "the store is unavailable and nothing was recorded; try again shortly"
    if isinstance(error, StoreCannotWrite):
        # Its reason is in words of our own, never the driver's.
        message = f"the store cannot write: {error.reason}; nothing was recorded"
    return error_response(
        503, StoreUnavailable.code, message, {"Retry-After": str(STORE_RETRY_AFTER)}
    )


def _where(location: Any) -> str:
    parts = [str(p) for p in location if p not in ("body", "query", "path", "header")]
    whole = "the body" if tuple(location)[:1] == ("body",) else "the request"
    return ".".join(parts) or whole


async def _validation(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    refused = await body_refusal(request, error.errors())
    if refused is not None:
        return error_response(*refused)
    problems = [
        f"{_where(item.get('loc', ()))}: {item.get('msg', 'invalid')}"
        for item in error.errors()[:MAX_VALIDATION_ERRORS]
    ]
    return error_response(422, "invalid_request", "; ".join(problems) or "invalid request")


def _http(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    try:
        phrase = http.HTTPStatus(error.status_code).phrase
    except ValueError:
        phrase = "error"
    code = _CODES.get(error.status_code) or phrase.lower().replace(" ", "_").replace("-", "_")
    message = error.detail if isinstance(error.detail, str) else phrase
    if error.status_code == 400 and message == _UNREADABLE:
        message = _UNREADABLE_SAID
    return error_response(error.status_code, code, message, error.headers)


def _unexpected(_: Request, error: Exception) -> JSONResponse:
    if isinstance(error, SymfonicError):
        logger.error("a request failed: %s: %s", type(error).__name__, error)
    else:
        logger.error("a request failed unexpectedly", exc_info=error)
    return error_response(500, "internal", "the request failed; see the server log")


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the one shape."""
    app.add_exception_handler(RequestError, _request_error)
    app.add_exception_handler(StoreUnavailable, _store_unavailable)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)


_WHEN = {
    400: "The body could not be read as JSON (`bad_request`; the message says where it broke).",
    401: "Missing or unknown API key.",
    403: "This principal may not answer this pause (`forbidden`), or asked for the call "
    "and may not approve its own request (`own_request`).",
    404: "Unknown session or agent, or a token that does not verify or names no pause.",
    409: "The pause is being answered (`already_claimed`) or was already answered with "
    "another answer (`already_answered`); the answer's `args_digest` is not the pause's "
    "(`stale_question`, the token is not spent; an edit of a call that needs several "
    "approvals makes the old digest stale); the session is busy or paused; or "
    "`base_revision` does not match.",
    410: "The pause expired or was abandoned.",
    413: "The body is larger than the service accepts.",
    415: "The body was sent without `Content-Type: application/json` (`unsupported_media_type`).",
    422: "Malformed body, an answer that fails the pause's `response_schema`, or an edit of "
    "a delegate's call that needs several approvals (the token is not spent).",
    429: "Budget refused before the claim (the token is not spent; `budget_refused`), the "
    "caller holds as many streams (background runs count) as one principal may "
    "(`too_many_streams`), or too many "
    "wrong keys came from this address or for this key (`too_many_failed_keys`); see "
    "`Retry-After`.",
    503: "The store is unreachable and nothing was claimed (`store_unavailable`); "
    "see `Retry-After`.",
}

_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds until a retry may succeed.",
        "schema": {"type": "integer"},
    }
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}},
    429: _RETRY_AFTER,
    503: _RETRY_AFTER,
}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry documenting each error status an operation can return."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": ErrorResponse, "description": _WHEN[status]}
        if status in _HEADERS:
            entry["headers"] = _HEADERS[status]
        out[status] = entry
    return out
