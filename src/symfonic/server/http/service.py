"""What every route depends on: the app's `HttpService`, its opened host, and the caller's
principal from a Bearer key or the inbox's cookie. A missing or unknown key is a 401 before
the body is read."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any

from anyio.abc import TaskGroup
from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import Response

from symfonic.core.contracts.errors import CsrfRefused, Unauthenticated
from symfonic.core.contracts.principal import Principal
from symfonic.server.http.auth import LOCAL, Authenticator
from symfonic.server.http.key_brake import KeyBrake
from symfonic.server.http.web_sessions import (
    COOKIE_NAME,
    CSRF_HEADER,
    WebSession,
    WebSessions,
)
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.runs import WorkerRuns
from symfonic.server.transport.stream_shares import StreamShares
from symfonic.turns.background import RunHandle

bearer = HTTPBearer(
    auto_error=False,
    description="An API key from `SYMFONIC_API_KEYS`. Not needed when the server runs "
    "without keys (as the single principal `local`, loopback only).",
)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _depends_on(dependant: Dependant, call: Callable[..., Any]) -> bool:
    return any(sub.call == call or _depends_on(sub, call) for sub in dependant.dependencies)


class HttpService:
    def __init__(
        self,
        host: ServiceHost,
        authenticator: Authenticator,
        shares: StreamShares | None = None,
        brake: KeyBrake | None = None,
        runs: WorkerRuns | None = None,
    ) -> None:
        self.host = host
        self.runs = runs if runs is not None else WorkerRuns(host)
        self.authenticator = authenticator
        self.shares = shares if shares is not None else StreamShares()
        self.brake = brake if brake is not None else KeyBrake()
        self._web_sessions: WebSessions | None = None

    def __repr__(self) -> str:
        return f"HttpService({self.host!r}, {self.authenticator!r})"

    async def ready(self) -> ServiceHost:
        if not self.host.is_open:
            await self.host.open()
        return self.host

    async def web_sessions(self) -> WebSessions:
        """The inbox's session signer, keyed by the database's secret (read once)."""
        if self._web_sessions is None:
            host = await self.ready()
            self._web_sessions = WebSessions(await host.store.signing_secret(), self.authenticator)
        return self._web_sessions

    async def web_session(self, request: Request) -> WebSession | None:
        """The inbox session the request's cookie names, if it verifies."""
        cookie = request.cookies.get(COOKIE_NAME)
        if cookie is None or self.authenticator.open:
            return None
        return (await self.web_sessions()).verify(cookie)

    async def authenticate(self, request: Request) -> Principal:
        if self.authenticator.open:
            return LOCAL
        authorization = request.headers.get("authorization")
        if authorization is None:
            session = await self.web_session(request)
            if session is not None:
                if request.method not in SAFE_METHODS and not (
                    await self.web_sessions()
                ).csrf_matches(session, request.headers.get(CSRF_HEADER)):
                    raise CsrfRefused(
                        "this request changes something and came from a browser session "
                        "without its CSRF token; reload the inbox and try again"
                    )
                return session.principal
        scheme, _, key = (authorization or "").partition(" ")
        found = self.principal_of_key(request, key if scheme.lower() == "bearer" else "")
        if found is None:
            raise Unauthenticated("send a valid API key as 'Authorization: Bearer <key>'")
        return found

    def principal_of_key(self, request: Request, key: str) -> Principal | None:
        """The principal holding ``key``, behind the key brake: braked first, counted if wrong.

        No key is not a guess, and is not counted. Nothing awaits between the
        brake, the check and the count, so parallel guesses are each counted.
        """
        if not key.strip():
            return None
        address = request.client.host if request.client is not None else "unknown"
        self.brake.check(address, key)
        found = self.authenticator.principal_of_key(key)
        if found is None:
            self.brake.failed(address, key)
        return found

    async def in_background(
        self, principal: Principal, start: Callable[[TaskGroup], Awaitable[RunHandle]]
    ) -> RunHandle:
        """Start a run in this worker's background runs, holding one of ``principal``'s
        streams until it ends: a run with nobody listening costs what an open stream
        does, so past the share it is a 429 before anything starts (no turn, no claim)."""
        slot = self.shares.acquire(principal, {}, idle=False)  # no connection to close
        try:
            started = await start(self.runs.tasks)
        except BaseException:
            slot.release()
            raise
        self.runs.track(started, on_end=slot.release)
        return started


def service_of(request: Request) -> HttpService:
    """The `HttpService` that `create_app` put on the app serving ``request``."""
    service: HttpService = request.app.state.symfonic
    return service


Service = Annotated[HttpService, Depends(service_of)]


async def caller(
    request: Request,
    service: Service,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    return await service.authenticate(request)


async def opened_host(service: Service) -> ServiceHost:
    return await service.ready()


Caller = Annotated[Principal, Depends(caller)]
Host = Annotated[ServiceHost, Depends(opened_host)]


class AuthenticatingRoute(APIRoute):
    """A route that, when it depends on `caller`, authenticates before the body is read."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        if not _depends_on(self.dependant, caller):
            return handler

        async def authenticate_then_handle(request: Request) -> Response:
            await service_of(request).authenticate(request)
            return await handler(request)

        return authenticate_then_handle
