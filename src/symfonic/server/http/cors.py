"""Cross-origin access for a browser app, only for the origins named and never with credentials,
so the inbox's cookie grants nothing outside its own origin.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from symfonic.core.contracts.errors import ConfigurationError

ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")
METHODS = ["GET", "POST"]
HEADERS = ["Authorization", "Content-Type", "Accept", "Last-Event-ID"]
EXPOSED = ["Retry-After"]
PREFLIGHT_MAX_AGE = 600


def origin_of(text: str) -> str:
    """``text`` as an origin a browser sends (``https://app.example``), or a refusal in words."""
    origin = text.strip().rstrip("/")
    if not ORIGIN.fullmatch(origin):
        raise ConfigurationError(
            f"a CORS origin is a scheme and a host, with a port if not the default, such as "
            f"https://app.example or http://localhost:5173; {text!r} is not one"
        )
    return origin


def install_cors(app: FastAPI, origins: Sequence[str]) -> None:
    """Let ``origins`` use the app from a browser; with none, nothing is installed."""
    allowed = sorted({origin_of(origin) for origin in origins})
    if not allowed:
        return
    app.add_middleware(
        CORSMiddleware,
        allow_origins=allowed,
        allow_methods=METHODS,
        allow_headers=HEADERS,
        expose_headers=EXPOSED,
        allow_credentials=False,
        max_age=PREFLIGHT_MAX_AGE,
    )
