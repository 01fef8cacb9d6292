"""AG-UI 1.0 for symfonic: ``POST /v1/agui`` and the agent's capabilities."""

from symfonic.server.agui.router import agui_router

__all__ = ["agui_router"]
