"""The web inbox (``GET /inbox``): where people see and answer the pauses that wait for them.

Served by the same app as the API, from files in this package: no build step,
no asset from another origin, so it works offline. :mod:`.routes` signs people
in and out and serves the page; the page itself (``static/``) lists the
caller's pauses through ``GET /v1/pauses``, follows ``GET /v1/pauses/events``
and answers through ``POST /v1/resume``, like any other client.
"""

from symfonic.agent.fastapi.inbox.routes import install_inbox

__all__ = ["install_inbox"]
