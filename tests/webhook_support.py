"""A real webhook receiver on 127.0.0.1, on a thread of its own, for the webhook tests.

It runs its own HTTP server (``http.server``), so it answers whether the test's
event loop is busy or blocked, and a ``symfonic serve`` process can reach it.
It records every request, verifies each with the ``standardwebhooks`` library
and validates its body against the committed JSON Schema; it can answer with
any status, hold requests open, stop listening and listen again on the same
port, and it counts requests that arrive while another with the same
``webhook-id`` is still open.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from standardwebhooks import Webhook as Verifier

from http_support import free_port

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SCHEMA_PATH = Path(__file__).parent.parent / "docs" / "webhook-payloads.schema.json"
_SCHEMA = json.loads(SCHEMA_PATH.read_text())


@dataclass(frozen=True)
class Received:
    at: float
    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def payload(self) -> dict[str, Any]:
        """The body, verified with the standard library and validated against the schema."""
        payload: dict[str, Any] = Verifier(SECRET).verify(self.body, self.headers)
        jsonschema.validate(payload, _SCHEMA)
        return payload

    @property
    def type(self) -> str:
        return str(self.payload["type"])


class Receiver:
    def __init__(self) -> None:
        self.port = free_port()
        self.status = 200
        self.hold = 0.0
        self.released = threading.Event()
        self.received: list[Received] = []
        self.open: Counter[str] = Counter()
        self.concurrent_duplicates = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def listen(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                with receiver._lock:
                    message = headers.get("webhook-id", "")
                    receiver.open[message] += 1
                    if receiver.open[message] > 1:
                        receiver.concurrent_duplicates += 1
                    status, hold = receiver.status, receiver.hold
                    receiver.received.append(Received(time.monotonic(), headers, body, status))
                try:
                    if hold:
                        receiver.released.wait(hold)
                    self.send_response(status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender went away (killed, or timed out) while we held it
                finally:
                    with receiver._lock:
                        receiver.open[message] -= 1

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server

    def stop(self) -> None:
        """Stop listening: a sender's connection is refused until :meth:`listen`."""
        if self._server is not None:
            self.released.set()
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def of_type(self, event: str) -> list[Received]:
        return [request for request in list(self.received) if request.type == event]

    async def wait_for(self, count: int, *, within: float, event: str | None = None) -> None:
        """Until ``count`` requests (of ``event``) have arrived, failing after ``within`` s."""
        with anyio.fail_after(within):
            while True:
                if len(self.received if event is None else self.of_type(event)) >= count:
                    return
                await anyio.sleep(0.01)


@contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.listen()
    try:
        yield receiver
    finally:
        receiver.stop()
