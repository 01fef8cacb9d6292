"""`GET /v1/pauses`, `POST /v1/pauses/{id}/reassign` and `GET /v1/health` with its probes.

A listing shows only the pauses this principal may answer; health is 503 while the store
cannot write, readiness also while the worker stops, liveness never.
"""

from datetime import UTC, datetime
from typing import Annotated

import anyio
from fastapi import APIRouter, Path, Query

from symfonic.core.contracts.errors import RequestError, StoreUnavailable
from symfonic.core.contracts.pause_views import PauseList, PauseView
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.wire import Health
from symfonic.server.http.pause_cursor import decode_cursor, encode_cursor
from symfonic.server.http.pause_details import detailed
from symfonic.server.http.schemas import PauseQuery, Probe, ReassignRequest
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host, Service
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.pause_listing import MAX_LIMIT, PauseFilters, pause_page
from symfonic.server.service.reassignment import reassign
from symfonic.server.transport.errors import documented

HEALTH_TIMEOUT = 3.0

LISTING_RESPONSES = documented(400, 401, 422, 503)
LISTING_RESPONSES[400] = {
    **LISTING_RESPONSES[400],
    "description": "`invalid_cursor`: a `cursor` no listing handed out, or one altered.",
}
LISTING_RESPONSES[422] = {
    **LISTING_RESPONSES[422],
    "description": "A parameter out of range (`invalid_request`), e.g. `limit` above "
    f"{MAX_LIMIT} or an unknown `kind`.",
}


REASSIGN_RESPONSES = documented(400, 401, 403, 404, 409, 422, 503)
REASSIGN_RESPONSES[403] = {
    **REASSIGN_RESPONSES[403],
    "description": "This principal does not have the `operator` scope.",
}
REASSIGN_RESPONSES[409] = {
    **REASSIGN_RESPONSES[409],
    "description": "`pause_not_pending`: the pause was answered, expired or abandoned.",
}


READY_RESPONSES = documented(503)
READY_RESPONSES[503] = {
    **READY_RESPONSES[503],
    "description": "The store did not answer (`store_unavailable`), or this worker is "
    "stopping (`worker_stopping`); see `Retry-After`.",
}


class WorkerStopping(RequestError):
    """This worker stops: readiness sends new work to the others."""

    code = "worker_stopping"
    status = 503


async def _listed(host: ServiceHost, principal: Principal, query: PauseQuery) -> PauseList:
    """One page of the pauses ``principal`` may answer, a token on each still answerable."""
    after = None if query.cursor is None else decode_cursor(query.cursor)
    filters = PauseFilters(query.state, query.agent, query.kind, query.audience, query.q)
    page = await pause_page(host, principal, filters, limit=query.limit, after=after)
    agent = host.agent(None)
    now = agent.clock()
    views = []
    for pause in page.pauses:
        token = agent.token_for(pause) if pause.answerable(now) else None
        views.append(PauseView.of(pause, token))
    return PauseList(
        pauses=await detailed(host.store, views) if query.details else views,
        total=page.total,
        next_cursor=None if page.next is None else encode_cursor(page.next),
    )


router = APIRouter(prefix="/v1", route_class=AuthenticatingRoute)


@router.get(
    "/pauses",
    response_model=PauseList,
    responses=LISTING_RESPONSES,
    tags=["pauses"],
    summary="The pauses the caller may answer, a page at a time",
)
async def list_pauses(
    principal: Caller,
    host: Host,
    query: Annotated[PauseQuery, Query()],
) -> PauseList:
    return await _listed(host, principal, query)


@router.post(
    "/pauses/{pause_id}/reassign",
    response_model=PauseView,
    responses=REASSIGN_RESPONSES,
    tags=["pauses"],
    summary="Hand a pending pause to another audience (an operator's)",
)
async def reassign_pause(
    pause_id: Annotated[str, Path(max_length=64)],
    body: ReassignRequest,
    principal: Caller,
    host: Host,
) -> PauseView:
    pause = await reassign(
        host, principal, pause_id, body.audience, body.reason, keep_previous=body.keep_previous
    )
    agent = host.agent(pause.agent)
    token = agent.token_for(pause) if principal.may_answer(pause) else None
    return PauseView.of(pause, token)


@router.get(
    "/health",
    response_model=Health,
    responses=documented(503),
    tags=["service"],
    summary="200 when the store answers and can write",
)
async def health(service: Service) -> Health:
    try:
        with anyio.fail_after(HEALTH_TIMEOUT):
            host = await service.ready()
            await host.store.ping()
            audit = await host.store.audit_anchor()
    except TimeoutError as error:
        raise StoreUnavailable("the store did not answer in time") from error
    return Health(
        status="ok",
        audit_unsealed=audit.unsealed,
        audit_unsealed_seconds=round(audit.unsealed_seconds(datetime.now(UTC)), 3),
    )


@router.get(
    "/health/live",
    response_model=Probe,
    tags=["service"],
    summary="200 while the process answers (a liveness probe)",
)
async def live() -> Probe:
    return Probe(status="ok")


@router.get(
    "/health/ready",
    response_model=Probe,
    responses=READY_RESPONSES,
    tags=["service"],
    summary="200 when this worker can serve now: its store answers, migrated, and it is "
    "not stopping (a readiness probe)",
)
async def ready(service: Service) -> Probe:
    if service.host.draining is not None:
        raise WorkerStopping("this worker is stopping; send new requests to another worker")
    try:
        with anyio.fail_after(HEALTH_TIMEOUT):
            host = await service.ready()  # opening the store migrates it, or refuses
            await host.store.ping()
    except TimeoutError as error:
        raise StoreUnavailable("the store did not answer in time") from error
    return Probe(status="ok")
