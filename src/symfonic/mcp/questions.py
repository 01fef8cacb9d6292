"""An MCP server's questions (elicitation) as pauses, and their answers as input responses.

The `Continuation` in the checkpoint keeps every answer, so a call re-issued after the
server refuses its sealed state is answered from the store (docs/mcp.md).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_types import (
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequest,
    InputResponses,
)

from symfonic.core.contracts.types import Answer, AnswerStatus
from symfonic.kernel.tools import Question
from symfonic.mcp.results import MCPToolError

__all__ = ["URL_DONE", "Asked", "Continuation", "asked_of", "response_to"]

URL_DONE = "done"
"""The field a URL question's answer sets to ``true`` once the person is done there."""


@dataclass(frozen=True)
class Asked:
    """One question of a round: the server's key for it, its digest, and the request."""

    key: str
    digest: str
    request: dict[str, Any]

    def elicitation(self) -> ElicitRequest:
        return ElicitRequest.model_validate(self.request)


def asked_of(server: str, key: str, request: InputRequest) -> Asked:
    """The question ``request`` is; a request for anything but a person's answer is refused."""
    if not isinstance(request, ElicitRequest):
        raise MCPToolError(
            f"the MCP server {server} asked for {request.method}, which symfonic does not "
            "provide; only questions to a person are answered"
        )
    body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
    params = {k: v for k, v in body.get("params", {}).items() if k not in ("_meta", "task")}
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return Asked(key, hashlib.sha256(canonical.encode()).hexdigest(), body)


def response_to(asked: Asked, answer: Answer, status: AnswerStatus) -> dict[str, Any]:
    """The input response an answer is, as JSON: accept, cancel or decline."""
    if status == "cancelled":
        result = ElicitResult(action="cancel")
    elif status == "declined":
        result = ElicitResult(action="decline")
    elif isinstance(asked.elicitation().params, ElicitRequestURLParams):
        result = ElicitResult(action="accept")
    else:
        result = ElicitResult(action="accept", content=dict(answer))
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True)
class Continuation:
    """What a paused MCP call keeps to go on, on any worker (see the module's docstring)."""

    server: str
    tool: str
    arguments: dict[str, Any]
    state: str | None = None
    round: tuple[Asked, ...] = ()
    """The questions of the server's last round, each answered or still to be."""
    answers: tuple[tuple[str, str, dict[str, Any]], ...] = field(default=())
    """Every answer given so far: (key, digest, the input response)."""

    def stored(self, asked: Asked) -> dict[str, Any] | None:
        """The answer already given to this question, matched by key and digest."""
        for key, digest, response in self.answers:
            if (key, digest) == (asked.key, asked.digest):
                return response
        return None

    def unanswered(self) -> list[Asked]:
        return [asked for asked in self.round if self.stored(asked) is None]

    def answering(self, response: dict[str, Any]) -> Continuation:
        """This continuation with the first unanswered question of its round answered."""
        (asked, *_) = self.unanswered()
        return replace(self, answers=(*self.answers, (asked.key, asked.digest, response)))

    def responses(self) -> InputResponses:
        """The stored answer to every question of the round, by the server's key."""
        found = {asked.key: self.stored(asked) for asked in self.round}
        return {key: ElicitResult.model_validate(r) for key, r in found.items() if r is not None}

    def question(self) -> Question:
        """The pause for the first unanswered question of the round."""
        asked = self.unanswered()[0]
        params = asked.elicitation().params
        if isinstance(params, ElicitRequestURLParams):
            return Question(
                query=f"{params.message}\n\nOpen {params.url} and confirm here when you are done.",
                response_schema=_url_schema(params.url),
                continuation=self.body(),
                server=self.server,
            )
        return Question(
            query=params.message,
            response_schema=dict(params.requested_schema),
            continuation=self.body(),
            server=self.server,
        )

    def body(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "arguments": self.arguments,
            "state": self.state,
            "round": [{"key": a.key, "digest": a.digest, "request": a.request} for a in self.round],
            "answers": [{"key": k, "digest": d, "response": r} for k, d, r in self.answers],
        }

    @classmethod
    def of(cls, body: Any) -> Continuation:
        return cls(
            server=str(body["server"]),
            tool=str(body["tool"]),
            arguments=dict(body["arguments"]),
            state=body.get("state"),
            round=tuple(Asked(a["key"], a["digest"], dict(a["request"])) for a in body["round"]),
            answers=tuple((a["key"], a["digest"], dict(a["response"])) for a in body["answers"]),
        )


def _url_schema(url: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            URL_DONE: {
                "type": "boolean",
                "const": True,
                "title": f"I am done at {url}",
            }
        },
        "required": [URL_DONE],
    }
