"""`/redoc`: ReDoc from the app's own assets, on a page whose Content-Security-Policy lets the
browser load nothing from a third party.
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
    """Serve ReDoc at ``path`` from the packaged assets, under `POLICY`."""

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
