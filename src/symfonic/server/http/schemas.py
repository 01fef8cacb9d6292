"""The HTTP API's bodies.

Requests are strict and made into JSON every later layer can hold: a lone surrogate
becomes U+FFFD, and NaN, infinities and excessive nesting are refused.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from symfonic.core.contracts.types import (
    InteractionKind,
    PauseInfo,
    PauseState,
    TurnResult,
    asked,
)
from symfonic.core.contracts.wire import ErrorDetail
from symfonic.server.http.pause_cursor import MAX_CURSOR_CHARS
from symfonic.server.service.pause_listing import DEFAULT_LIMIT, MAX_LIMIT

MAX_MESSAGE_CHARS = 100_000
MAX_JSON_DEPTH = 64
MAX_SEARCH_CHARS = 200
MAX_METADATA_BYTES = 16 << 10
NAME_PATTERN = r"^[A-Za-z0-9._:-]{1,200}$"
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any, depth: int = 0) -> Any:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("numbers must be finite (no NaN or Infinity)")
    if isinstance(value, dict):
        return {_clean(k, depth + 1): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(item, depth + 1) for item in value]
    return value


def _small_metadata(value: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise PydanticCustomError(
            "too_large",
            "metadata is {size} bytes as JSON; at most {limit} are accepted",
            {"size": size, "limit": MAX_METADATA_BYTES},
        )
    return value


def _json_integer(value: Any) -> Any:
    # What JSON Schema calls an integer: a number with no fractional part (``3`` or
    # ``3.0``); never ``true``, which Python counts as 1, nor the string ``"3"``.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("int_type", "Input should be an integer")
    return value


CleanJson = Annotated[JsonValue, AfterValidator(_clean)]
CleanText = Annotated[str, AfterValidator(_clean)]
# The bounds before the validator: after it, pydantic writes them as ``ge``/``le``,
# which JSON Schema does not know, instead of ``minimum``/``maximum``.
Revision = Annotated[int, Field(ge=0, le=2**31 - 1), BeforeValidator(_json_integer)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# requests -----------------------------------------------------------------


class CreateSession(_Body):
    agent: Annotated[str | None, Field(pattern=NAME_PATTERN)] = Field(
        default=None, description="The agent to bind the session to; default: the first hosted."
    )
    metadata: Annotated[
        dict[str, JsonValue], AfterValidator(_clean), AfterValidator(_small_metadata)
    ] = Field(
        default_factory=dict,
        description="Free-form data kept with the session; at most 16 KiB as compact JSON.",
    )


_BACKGROUND = (
    "Run in the background: every refusal is decided first, then the answer is 202 with "
    "the run's id and events URL, and the turn runs on whether or not anyone listens "
    "(docs/runs.md)."
)


class TurnRequest(_Body):
    message: Annotated[CleanText, Field(min_length=1, max_length=MAX_MESSAGE_CHARS)] = Field(
        description="The user's message."
    )
    base_revision: Revision | None = Field(
        default=None,
        description="Refuse the turn (409) unless the session is at this revision.",
    )
    on_pending_pause: Literal["reject", "abandon"] = Field(
        default="reject",
        description="With a pending pause: refuse the turn (409), or abandon the pause and run.",
    )
    background: bool = Field(default=False, description=_BACKGROUND)
    on_busy: Literal["reject", "enqueue", "interrupt", "rollback"] = Field(
        default="reject",
        description="While another turn runs on the session: `reject` refuses this one "
        "(409 `session_busy`). `enqueue` keeps it in the session's queue: it runs after "
        "the turns before it, in order, once each, on whichever worker frees the session, "
        "and the answer is always 202 with its run's id (`queued` until it runs; at once "
        "when nothing holds the session). `interrupt` cancels the running turn as a "
        "cancel of its run does (it publishes nothing; a resume's pause is `abandoned`) "
        "and runs this one; `rollback` does the same and deletes the cancelled turn's "
        "run and kept events. A refused `interrupt` or `rollback` cancels nothing. A "
        "pending pause is not a busy session: `on_pending_pause` decides, when the "
        "message is sent and, for a queued one, again when it reaches the head of the "
        "queue (docs/runs.md).",
    )


# An answer is required unless the person cancelled or declined; said in the schema
# too, so a client generated from it sends what the service accepts.
_ANSWER_UNLESS_CANCELLED: JsonDict = {
    "if": {"required": ["status"], "properties": {"status": {"enum": ["cancelled", "declined"]}}},
    "else": {"required": ["answer"]},
}


class ResumeRequest(_Body):
    model_config = ConfigDict(json_schema_extra=_ANSWER_UNLESS_CANCELLED)

    token: str = Field(
        min_length=1, max_length=512, description="The pause token from `turn.paused`."
    )
    answer: CleanJson = Field(
        default=None,
        description="The answer, valid against the pause's `response_schema`. Required "
        "unless `status` is `cancelled` or `declined`.",
    )
    status: Literal["resolved", "cancelled", "declined"] = Field(
        default="resolved",
        description="`cancelled`: the person dismissed the question without answering. "
        "`declined`: they refused it outright; an MCP server's question hears `decline` "
        "(and `cancel` for `cancelled`), every other pause reads both as no answer.",
    )
    args_digest: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="The approval's `args_digest` as the person was shown it. One that is "
        "not the pause's is refused with 409 `stale_question` before anything is claimed; "
        "the token stays usable.",
    )
    background: bool = Field(default=False, description=_BACKGROUND)

    @model_validator(mode="after")
    def _answered_unless_cancelled(self) -> ResumeRequest:
        if self.status == "resolved" and "answer" not in self.model_fields_set:
            raise PydanticCustomError(
                "missing", "answer is required unless status is cancelled or declined"
            )
        return self


class PauseQuery(_Body):
    state: PauseState = Field(default=PauseState.PENDING, description="Which pauses to list.")
    limit: int = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description=f"At most this many pauses on the page (1 to {MAX_LIMIT}).",
    )
    cursor: str | None = Field(
        default=None,
        max_length=MAX_CURSOR_CHARS,
        description="The `next_cursor` of the previous page: list the pauses after it.",
    )
    agent: Annotated[str | None, Field(pattern=NAME_PATTERN)] = Field(
        default=None, description="Only this agent's pauses."
    )
    kind: InteractionKind | None = Field(default=None, description="Only pauses of this kind.")
    audience: Annotated[str | None, Field(pattern=NAME_PATTERN)] = Field(
        default=None, description="Only pauses addressed to this scope (one the caller holds)."
    )
    q: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SEARCH_CHARS,
        description="Only pauses whose question contains this text (ignoring case).",
    )
    details: bool = Field(
        default=False,
        description="Also give each answerable pause its `tool_name`, `tool_args` and "
        "`recent_messages`, read from its checkpoint (one read per pause).",
    )


# responses ----------------------------------------------------------------


class ReassignRequest(BaseModel):
    """Hand a pending pause to another audience (an operator's)."""

    model_config = ConfigDict(extra="forbid")

    audience: Annotated[str, Field(pattern=NAME_PATTERN)] = Field(
        description="The scope that answers the pause from now on."
    )
    reason: str = Field(min_length=1, max_length=500, description="Why, in the operator's words.")
    keep_previous: bool = Field(
        default=False, description="Whether the audience before keeps access to the pause."
    )


# A paused turn's pause as PauseInfo holds it: the question and its token. The
# token is declared again only to keep it out of the model's repr.
class PauseOutcome(BaseModel, PauseInfo, frozen=True):
    token: str = Field(repr=False)


class TurnOutcome(BaseModel):
    """A turn's outcome as one JSON body (`Accept: application/json`)."""

    status: Literal["complete", "paused", "failed"]
    session_id: str
    revision: int = Field(description="The session revision after a completion, else the base.")
    answer: str | None = None
    pause: PauseOutcome | None = None
    error: ErrorDetail | None = None

    @classmethod
    def of(cls, result: TurnResult) -> TurnOutcome:
        pause = result.pause
        return cls(
            status=result.status,
            session_id=result.session_id,
            revision=result.revision,
            answer=result.answer,
            pause=None if pause is None else PauseOutcome(**asked(pause), token=pause.token),
            error=None
            if result.error is None
            else ErrorDetail(code=result.error.code, message=result.error.message),
        )


class Probe(BaseModel):
    status: Literal["ok"]
