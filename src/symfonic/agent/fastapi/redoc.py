"""``/redoc``: ReDoc from the app's own assets, on a page that may load nothing else.

fastapi-offline serves ReDoc's script from the package, but the script draws its
"API docs by Redocly" badge with an image from ``cdn.redoc.ly``: a browser on a
network without internet access waits on it, and any other sends a third party
the fact that it opened the docs. The page's Content-Security-Policy lets it
load only from the app itself (plus the inline styles and the ``blob:`` worker
ReDoc makes for its search), so the browser never asks the CDN and the badge
keeps only its words.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html
from starlette.responses import HTMLResponse

# Where fastapi-offline mounts its packaged assets (its default ``static_url``).
ASSETS = "/static-offline-docs"
POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'"
)


def install_redoc(app: FastAPI, path: str = "/redoc") -> None:
    """Serve ReDoc at ``path`` from the packaged assets, under :data:`POLICY`."""

    @app.get(path, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
        page.headers["Content-Security-Policy"] = POLICY
        return page
