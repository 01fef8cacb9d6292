"""What the client raises: `ApiError` for a refusal (also the Python API's own type for
its code, e.g. `PauseExpired`), `ServiceUnreachable` when nothing answers at the URL,
and httpx's other `TransportError`s for a connection that fails later.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from symfonic.core.contracts.errors import RequestError, StoreUnavailable, SymfonicError

# How much of a body that is not the error shape is quoted (a proxy's HTML page).
QUOTED_CHARS = 200


class ApiError(Exception):
    """The service refused a request: its ``status``, ``code``, ``message`` and ``retry_after``
    (seconds, from ``Retry-After``); also the Python API's own type where it has one."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after: int | None = None
    ) -> None:
        # Exception's own __init__: a core type's (BudgetRefused's) wants other arguments.
        Exception.__init__(self, f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.retry_after = retry_after
        # What the Python API's RequestError carries, so code written for it works here.
        self.fields: dict[str, object] = {} if retry_after is None else {"retry_after": retry_after}


class ServiceUnreachable(httpx.ConnectError):
    """No service answered at ``url`` (nothing listens there, or the host is unknown)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach a symfonic service at {url}: {reason}")
        self.url = url


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Raise a failed connection as `ServiceUnreachable`, naming ``url``."""
    try:
        yield
    except httpx.ConnectError as error:
        raise ServiceUnreachable(url, str(error) or type(error).__name__) from error


def _below(root: type[SymfonicError]) -> Iterator[type[SymfonicError]]:
    for sub in root.__subclasses__():
        if not issubclass(sub, ApiError):
            yield sub
            yield from _below(sub)


def _refusal_types() -> dict[str, type[ApiError]]:
    # One ApiError subclass per code the Python API has a type for, built once:
    # e.g. ``PauseExpired`` here is both ApiError and core's PauseExpired. Types
    # declared outside core (the HTTP layer's own) are not the Python API's.
    found: dict[str, type[ApiError]] = {}
    kinds: list[type[SymfonicError]] = [*_below(RequestError), StoreUnavailable]
    for kind in kinds:
        if not kind.__module__.startswith("symfonic.core.") or kind.code in found:
            continue
        found[kind.code] = type(kind.__name__, (ApiError, kind), {"__module__": __name__})
    return found


REFUSALS = _refusal_types()


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("Retry-After", "")
    return int(value) if value.isdigit() else None


def error_of(response: httpx.Response) -> ApiError:
    """The refusal a response with status 400 or more stands for (its body already read)."""
    status, retry_after = response.status_code, _retry_after(response)
    try:
        error = response.json()["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = response.text[:QUOTED_CHARS].strip() or response.reason_phrase
        return ApiError(status, "http_error", text, retry_after=retry_after)
    kind = REFUSALS.get(code, ApiError)
    return kind(status, code, message, retry_after=retry_after)
