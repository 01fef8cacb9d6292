"""Caps on request body size, lower for the routes whose bodies are small by nature; a body over
its cap is refused before it is parsed, with the JSON 413 every refusal looks like.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from symfonic.server.transport.errors import error_response

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
