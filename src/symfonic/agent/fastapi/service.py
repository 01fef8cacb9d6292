"""What every route depends on: the opened host, and the caller's principal.

The principal comes only from the ``Authorization: Bearer`` header, checked by
the :class:`Authenticator` in constant time; a missing or unknown key is a 401
before any route code runs. With no keys configured every caller is ``local``.
The host is opened by the app's lifespan; an app mounted inside another whose
lifespan did not run opens it on the first request instead.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from symfonic.agent.fastapi.auth import Authenticator, Unauthenticated
from symfonic.agent.fastapi.host import ServiceHost
from symfonic.core.contracts.principal import Principal

bearer = HTTPBearer(
    auto_error=False,
    description="An API key from `SYMFONIC_API_KEYS`. Not needed when the server runs "
    "without keys (as the single principal `local`, loopback only).",
)


class HttpService:
    def __init__(self, host: ServiceHost, authenticator: Authenticator) -> None:
        self.host = host
        self.authenticator = authenticator

    def __repr__(self) -> str:
        return f"HttpService({self.host!r}, {self.authenticator!r})"

    async def ready(self) -> ServiceHost:
        if not self.host.is_open:
            await self.host.open()
        return self.host

    async def principal(
        self,
        request: Request,
        _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        found = self.authenticator.principal_for(request.headers.get("authorization"))
        if found is None:
            raise Unauthenticated("send a valid API key as 'Authorization: Bearer <key>'")
        return found
