"""Caps on request body size, refused in the service's one error shape.

One cap holds for every route; a few routes whose bodies are small by nature
have a lower one (``ROUTE_LIMITS``): an answer (``POST /v1/resume``) and a new
session's metadata (``POST /v1/sessions``). Parsing JSON costs time and memory
in proportion to its size, so a body far larger than its bounds allow
(:data:`symfonic.capabilities.human.answers.MAX_ANSWER_BYTES`,
:data:`symfonic.agent.fastapi.schemas.MAX_METADATA_BYTES`) is refused before
it is parsed, not after. The lower caps leave room for whitespace and escapes.

A body over the cap is refused before it is parsed: at once when its
``Content-Length`` says so, or as soon as the bytes received pass the cap when
it is sent chunked. Either way the answer is the JSON 413 every other refusal
looks like, not a bare text response from a layer the error handlers never see.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from symfonic.agent.http.errors import error_response

ANSWER_BODY_SIZE = 256 << 10
SESSION_BODY_SIZE = 64 << 10
# Paths as the app routes them, below wherever it is mounted.
ROUTE_LIMITS = {"/v1/resume": ANSWER_BODY_SIZE, "/v1/sessions": SESSION_BODY_SIZE}


class BodyLimit:
    def __init__(
        self, app: ASGIApp, max_body_size: int, route_limits: Mapping[str, int] = ROUTE_LIMITS
    ) -> None:
        self.app = app
        self.max_body_size = max_body_size
        self.route_limits = dict(route_limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self._cap(scope)
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > cap:
            await error_response(413, "content_too_large", _message(cap))(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    # Raised into the body read, where FastAPI passes an HTTPException on
                    # to the app's handlers: the same 413 as above.
                    raise HTTPException(413, _message(cap))
            return message

        await self.app(scope, limited, send)

    def _cap(self, scope: Scope) -> int:
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return min(self.max_body_size, self.route_limits.get(path, self.max_body_size))


def _message(cap: int) -> str:
    return f"the request body is larger than {cap} bytes, the most this route accepts"
