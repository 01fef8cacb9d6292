"""`/inbox`: the page, signing in with a key, signing out, and the page's own files.

The key travels once, in the sign-in body, and is never stored, echoed or logged; the
answer is a signed session cookie.
"""

from __future__ import annotations

import html
from pathlib import Path
from string import Template
from urllib.parse import parse_qs, urlsplit

import anyio
from fastapi import APIRouter, FastAPI, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from symfonic.core.contracts.errors import TooManyFailedKeys
from symfonic.core.contracts.principal import Principal
from symfonic.server.http.auth import LOCAL
from symfonic.server.http.service import HttpService, Service
from symfonic.server.http.web_sessions import COOKIE_NAME, CSRF_HEADER, SESSION_SECONDS

HERE = Path(__file__).parent
WRONG_KEY_DELAY = 1.0
MAX_FORM_BYTES = 4096
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _template(name: str) -> Template:
    return Template((HERE / "templates" / name).read_text(encoding="utf-8"))


PAGE = _template("page.html")
SIGN_IN_FORM = _template("sign_in.html")


def _page(template: Template, status: int = 200, **values: str) -> HTMLResponse:
    return HTMLResponse(template.substitute(values), status_code=status, headers=PAGE_HEADERS)


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


def _from_elsewhere(request: Request) -> bool:
    """A form posted by another site's page, as the browser tells it.

    ``Sec-Fetch-Site`` where the browser sends it, else ``Origin`` (which the
    page's ``Referrer-Policy: same-origin`` leaves on its own requests).
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return urlsplit(origin).netloc != request.headers.get("host", "")


router = APIRouter(include_in_schema=False)


@router.get("/")  # a browser opening the service
def _to_inbox(request: Request) -> RedirectResponse:
    # Relative to where the request came, so the page keeps working when the app
    # is mounted under a prefix: ``inbox`` from /inbox, ``../inbox`` from below it.
    target = "../inbox" if request.url.path.endswith("/sign-out") else "inbox"
    return RedirectResponse(target, status_code=303, headers=PAGE_HEADERS)


def install_inbox(app: FastAPI) -> None:
    """Add the inbox's routes and files to ``app``."""
    app.include_router(router)
    app.mount("/inbox/static", StaticFiles(directory=HERE / "static"), name="inbox-static")


@router.get("/inbox")
async def inbox(request: Request, service: Service) -> Response:
    """The page, or the sign-in form to a browser without a session."""
    if service.authenticator.open:
        return _signed_in_page(service, LOCAL, "")
    session = await service.web_session(request)
    if session is None:
        return _page(SIGN_IN_FORM, problem="")
    return _signed_in_page(service, session.principal, session.csrf_token)


@router.post("/inbox")
async def sign_in_with_key(request: Request, service: Service) -> Response:
    """A session cookie for the key the form sent, or the form again saying why not."""
    if service.authenticator.open:
        return _to_inbox(request)
    if _from_elsewhere(request):
        # Another site must not sign this browser in, even as someone else.
        return HTMLResponse(
            "<p>Sign in from the inbox page itself.</p>", status_code=403, headers=PAGE_HEADERS
        )
    key = (await _form(request)).get("key", "")
    try:
        principal = service.principal_of_key(request, key)
    except TooManyFailedKeys as braked:
        problem = (
            '<p class="problem" role="alert">Too many keys that were not accepted came '
            f"from here. Wait {braked.retry_after} seconds, then try again.</p>"
        )
        return _page(SIGN_IN_FORM, 429, problem=problem)
    if principal is None:
        await anyio.sleep(WRONG_KEY_DELAY)
        problem = (
            '<p class="problem" role="alert">That key was not accepted. '
            "Check that you copied all of it, and try again.</p>"
        )
        return _page(SIGN_IN_FORM, 401, problem=problem)
    cookie, _ = (await service.web_sessions()).issue(principal)
    response = _to_inbox(request)
    response.set_cookie(
        COOKIE_NAME,
        cookie,
        max_age=SESSION_SECONDS,
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


@router.post("/inbox/sign-out")
async def sign_out(request: Request, service: Service) -> Response:
    """Forget the session cookie; a signed-in browser must send the page's CSRF token."""
    session = await service.web_session(request)
    if session is not None:
        sent = request.headers.get(CSRF_HEADER) or (await _form(request)).get("csrf_token")
        if not (await service.web_sessions()).csrf_matches(session, sent):
            return HTMLResponse(
                "<p>Signing out needs the page's token: go back to the inbox, reload it "
                "and sign out from there.</p>",
                status_code=403,
                headers=PAGE_HEADERS,
            )
    response = _to_inbox(request)
    response.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict")
    return response


def _signed_in_page(service: HttpService, principal: Principal, csrf: str) -> HTMLResponse:
    """The inbox for ``principal``; an operator's cards offer to reassign (the
    service decides again on each request: the page only hides what would be 403)."""
    sign_out = (
        ""
        if service.authenticator.open
        else '<form method="post" action="inbox/sign-out" class="sign-out">'
        f'<input type="hidden" name="csrf_token" value="{html.escape(csrf)}">'
        '<button type="submit">Sign out</button></form>'
    )
    agent_options = "".join(
        f'<option value="{html.escape(name)}">{html.escape(name)}</option>'
        for name in service.host.agents
    )
    return _page(
        PAGE,
        principal=html.escape(principal.name),
        csrf=html.escape(csrf),
        may_reassign="yes" if principal.is_operator else "no",
        sign_out=sign_out,
        agent_options=agent_options,
    )
