"""The AG-UI endpoints: `POST /v1/agui` and its capabilities.

Past authentication and a parsed body every outcome travels as AG-UI events, save a
stream cap (429) and a store out of reach before the run (503).
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from ag_ui.core import EventType, RunAgentInput
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from symfonic.core.contracts.errors import RequestError, UnknownAgent
from symfonic.core.contracts.principal import Principal
from symfonic.server.agui.capabilities import capabilities_of
from symfonic.server.agui.run import agui_run
from symfonic.server.agui.stream import AguiEventStream
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.primed_turn import PrimedTurn
from symfonic.server.service.runs import WorkerRuns
from symfonic.server.transport.errors import ErrorResponse, documented
from symfonic.server.transport.stream_shares import StreamShares

# One SSE frame: ``data:`` is one AG-UI event, as JSON, named by its ``type``.
EVENT_FRAME = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                "type": "object",
                "required": ["type"],
                "properties": {"type": {"enum": [kind.value for kind in EventType]}},
            },
        }
    },
}


RUN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The run's AG-UI events as SSE (`data:` one event as JSON). "
        "A refused run is a stream of one `RUN_ERROR`.",
        "content": {"text/event-stream": {"itemSchema": EVENT_FRAME}},
    },
    **documented(400, 401, 413, 415, 422, 429, 503),
}

CAPABILITIES_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "An AG-UI `AgentCapabilities` object."},
    UnknownAgent.status: {"model": ErrorResponse, "description": "No agent of that name."},
    **documented(401, 422, 503),
}


def agui_router(
    host: ServiceHost,
    principal: Callable[..., Any],
    route_class: type[APIRoute] = APIRoute,
    shares: StreamShares | None = None,
    runs: WorkerRuns | None = None,
) -> APIRouter:
    """The AG-UI routes for ``host``; ``principal`` is the FastAPI dependency that authenticates.

    ``route_class``: the native API's, so that here too a caller is authenticated
    before the body is read. ``shares``: the native API's too, so a principal's
    runs and feeds count against one cap of streams. ``runs``: the worker's
    background runs, where each run's turn runs as a kept run that outlives its
    request and that a later request joins (default: none, each turn runs
    inside its request).
    """
    router = APIRouter(tags=["ag-ui"], route_class=route_class)
    streams = shares if shares is not None else StreamShares()
    background = runs if runs is not None else WorkerRuns(host)
    Caller = Annotated[Principal, Depends(principal)]
    Host = Annotated[ServiceHost, Depends(opening(host))]

    @router.post(
        "/v1/agui",
        response_class=AguiEventStream,
        status_code=200,
        summary="Run an agent with the AG-UI 1.0 protocol",
        responses=RUN_RESPONSES,
    )
    async def run(
        request: Request, run_input: RunAgentInput, caller: Caller, opened: Host
    ) -> AguiEventStream:
        """Run an agent on an AG-UI thread; the response is the run's AG-UI event stream."""
        slot = streams.acquire(caller, request.scope, idle=False)
        try:
            started = await PrimedTurn.start(agui_run(opened, caller, run_input, runs=background))
        except BaseException:
            slot.release()
            raise
        return AguiEventStream(started, slot=slot)

    @router.get(
        "/v1/agui/capabilities",
        summary="The AG-UI capabilities an agent declares",
        responses=CAPABILITIES_RESPONSES,
    )
    async def capabilities(caller: Caller, opened: Host, agent: str | None = None) -> JSONResponse:
        """The AG-UI ``AgentCapabilities`` of ``agent`` (default: the service's first)."""
        try:
            chosen = opened.agent(agent)
        except RequestError as error:
            return JSONResponse(
                {"error": {"code": error.code, "message": error.message}}, status_code=error.status
            )
        declared = capabilities_of(chosen)
        return JSONResponse(declared.model_dump(mode="json", by_alias=True))

    return router


def opening(host: ServiceHost) -> Callable[[], Awaitable[ServiceHost]]:
    """The dependency that gives ``host``, opened.

    An app whose lifespan did not run (one mounted inside another) opens it on first use.
    """

    async def ready() -> ServiceHost:
        if not host.is_open:
            await host.open()
        return host

    return ready
