"""A cap on request body size, refused in the service's one error shape.

A body over the cap is refused before it is parsed: at once when its
``Content-Length`` says so, or as soon as the bytes received pass the cap when
it is sent chunked. Either way the answer is the JSON 413 every other refusal
looks like, not a bare text response from a layer the error handlers never see.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from symfonic.agent.http.errors import error_response


class BodyLimit:
    def __init__(self, app: ASGIApp, max_body_size: int) -> None:
        self.app = app
        self.max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_size:
            await self._too_large()(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_size:
                    # Raised into the body read, where FastAPI passes an HTTPException on
                    # to the app's handlers: the same 413 as above.
                    raise HTTPException(413, self._message())
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"the request body is larger than {self.max_body_size} bytes"

    def _too_large(self) -> ASGIApp:
        return error_response(413, "content_too_large", self._message())
