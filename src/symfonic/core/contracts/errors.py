"""One exception tree, with the HTTP status each request error maps to.

A `RequestError` carries structured fields, so the HTTP layer maps it 1:1 and a caller
branches on its type.
"""

# SymfonicError
# ├── ConfigurationError             a developer mistake, found before a turn runs
# │   └── InteractionConfigurationError
# ├── TurnFailure                    a turn that ran and could not finish usefully
# │   ├── UnusableFinal              stopped at the tool limit, or with an empty answer
# │   ├── BudgetExhausted            the event guard stopped a turn over its plan
# │   └── ModelError                 the model call itself failed
# ├── TurnStopped                    a turn stopped when a new message took its session
# ├── StoreUnavailable               the database could not be reached       (503)
# │   └── StoreCannotWrite           it answers, but no write commits (a full disk)
# └── RequestError                   the caller can act on these; each has .code
#     ├── SessionNotFound            404
#     ├── PauseNotFound              404  token that does not verify or names no pause
#     ├── RunNotFound                404  no such run, or one the caller may not see
#     ├── PauseForbidden             403
#     │   └── OwnRequest             403  the requester approving its own request
#     ├── InvalidAnswer              422  answer fails the pause's response_schema
#     ├── PauseAlreadyClaimed        409  being answered right now
#     │   └── PauseAlreadyAnswered   409  superseded or published, with another answer
#     ├── StaleQuestion              409  the answer's args_digest is not the pause's
#     ├── PauseNotPending            409  a reassignment of a pause no longer pending
#     ├── RevisionConflict           409
#     ├── SessionBusy                409  a turn is running
#     ├── SessionPaused              409  a pause is pending and on_pending_pause=reject
#     ├── RunNotRunning              409  a cancel of a run that ended or already settled
#     ├── PauseExpired               410
#     ├── PauseAbandoned             410
#     ├── BudgetRefused              429  refused before the claim; .retry_after
#     ├── Unauthenticated            401  no API key, or one no principal holds
#     ├── CsrfRefused                403  a cookie-authenticated write without its CSRF token
#     ├── ScopeRequired              403  an operator's or auditor's route
#     ├── InvalidCursor              400
#     ├── InvalidRunInput            422  an AG-UI run input symfonic cannot run
#     ├── ThreadNotFound             404  an AG-UI thread the caller does not own
#     ├── UnknownAgent               404
#     ├── DeliveryNotFound           404  a webhook delivery
#     ├── ResumeMismatch             409  an AG-UI resume that does not answer the open interrupt
#     ├── TooManyFailedKeys          429  the key brake; .retry_after
#     ├── TooManyStreams             429  the principal's share of streams; .retry_after
#     └── FeedUnavailable            503  the live pause feed cannot be followed now

from __future__ import annotations

from typing import Any, ClassVar


class SymfonicError(Exception):
    """Base of every error symfonic raises on purpose."""

    code: ClassVar[str] = "internal"


class ConfigurationError(SymfonicError):
    """A developer mistake, found before a turn runs."""

    code = "configuration"


class InteractionConfigurationError(ConfigurationError):
    """An interaction or resume that cannot be built from what was recorded."""


class TurnFailure(SymfonicError):
    code = "internal"


class UnusableFinal(TurnFailure):
    """A done result that must not be published (tool limit, empty answer)."""

    def __init__(self, message: str, *, code: str = "empty_answer") -> None:
        super().__init__(message)
        self.error_code = code


class BudgetExhausted(TurnFailure):
    code = "budget_exhausted"


class ModelError(TurnFailure):
    code = "model_error"


class StoreUnavailable(SymfonicError):
    code = "store_unavailable"
    status: ClassVar[int] = 503


class StoreCannotWrite(StoreUnavailable):
    """The store answers reads but no write commits, for a reason that lasts until
    someone acts (a full disk, a read-only file): retrying within seconds is futile.

    ``reason`` says why in words a person can read, never the driver's.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class RequestError(SymfonicError):
    """A refusal the caller can act on: ``code``, ``status`` and structured ``fields``."""

    status: ClassVar[int] = 400

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields


class SessionNotFound(RequestError):
    """No such session, or one the caller does not own (404)."""

    code = "session_not_found"
    status = 404


class PauseNotFound(RequestError):
    """A token that does not verify, or names no pause (404)."""

    code = "pause_not_found"
    status = 404


class RunNotFound(RequestError):
    """No run by that id, or one the caller may not see: the same answer for both."""

    code = "run_not_found"
    status = 404


class PauseForbidden(RequestError):
    """The principal may not answer this pause (403)."""

    code = "forbidden"
    status = 403


class OwnRequest(PauseForbidden):
    """The principal whose turn paused approving its own request, where the pause's
    rule says someone else must (``allow_requester=False``). Refused before
    anything is recorded; the token stays usable by the others."""

    code = "own_request"


class InvalidAnswer(RequestError):
    """The answer fails the pause's ``response_schema`` (422)."""

    code = "invalid_answer"
    status = 422


class PauseAlreadyClaimed(RequestError):
    """The pause is being answered right now (409)."""

    code = "already_claimed"
    status = 409


class PauseAlreadyAnswered(PauseAlreadyClaimed):
    """Answered and settled with another answer; the same answer would be a replay."""

    code = "already_answered"


class StaleQuestion(RequestError):
    """The answer names another question than the pause asks: its ``args_digest``
    differs. Refused before the claim, so the token stays usable."""

    code = "stale_question"
    status = 409


class PauseNotPending(RequestError):
    """Only a pending, unexpired pause may be handed to another audience."""

    code = "pause_not_pending"
    status = 409


class RevisionConflict(RequestError):
    """The session moved past the revision the turn started from (409)."""

    code = "revision_conflict"
    status = 409


class RunNotRunning(RequestError):
    """A cancel of a run that already ended, or whose turn already settled."""

    code = "run_not_running"
    status = 409


class SessionBusy(RequestError):
    """A turn is running on the session (409)."""

    code = "session_busy"
    status = 409


class SessionPaused(RequestError):
    """A pause is pending and ``on_pending_pause`` is ``reject`` (409)."""

    code = "session_paused"
    status = 409


class PauseExpired(RequestError):
    """The pause expired before it was answered (410)."""

    code = "pause_expired"
    status = 410


class PauseAbandoned(RequestError):
    """The pause's turn failed after its claim; it can no longer be answered (410)."""

    code = "pause_abandoned"
    status = 410


class BudgetRefused(RequestError):
    """Refused before the claim by a quota; ``retry_after`` says when to try again (429)."""

    code = "budget_refused"
    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after


class Unauthenticated(RequestError):
    """No API key, or one no principal holds."""

    code = "unauthenticated"
    status = 401


class CsrfRefused(RequestError):
    """A cookie-authenticated request that changes state came without its CSRF token."""

    code = "csrf_refused"
    status = 403


class ScopeRequired(RequestError):
    """A route only a scope may use (`operator`, `auditor`), asked by a principal without it."""

    code = "forbidden"
    status = 403


class InvalidCursor(RequestError):
    """A cursor this service did not hand out, or one altered since."""

    code = "invalid_cursor"
    status = 400


class InvalidRunInput(RequestError):
    code = "invalid_input"
    status = 422


class ThreadNotFound(RequestError):
    code = "thread_not_found"
    status = 404


class UnknownAgent(RequestError):
    """A request names an agent this service does not host."""

    code = "unknown_agent"
    status = 404


class DeliveryNotFound(RequestError):
    code = "delivery_not_found"
    status = 404


class ResumeMismatch(RequestError):
    code = "resume_mismatch"
    status = 409


class TooManyFailedKeys(RequestError):
    """Too many wrong keys from this address, or for keys that begin like this one."""

    code = "too_many_failed_keys"
    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after


class TooManyStreams(RequestError):
    """The principal already holds as many streams as it may."""

    code = "too_many_streams"
    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after


class FeedUnavailable(RequestError):
    """The live feed cannot be followed now: the store cannot be watched, or no watch runs."""

    code = "feed_unavailable"
    status = 503


class TurnStopped(SymfonicError):
    """The turn was stopped at a step: its session was taken over by a new message."""

    code = "run_cancelled"
    message = "the run was cancelled; nothing was published"

    def __init__(self) -> None:
        super().__init__(self.message)
