"""The app the AG-UI client test serves with uvicorn: the demo agent, configured by
``SYMFONIC_STORE`` and ``SYMFONIC_API_KEYS`` (``uvicorn --factory agui_server:app``)."""

from __future__ import annotations

from fastapi import FastAPI

from symfonic.demo import demo_agent
from symfonic.server.app import create_app


def app() -> FastAPI:
    return create_app(demo_agent())
