"""The AG-UI endpoints: `POST /v1/agui` and its capabilities.

Past authentication and a parsed body every outcome travels as AG-UI events, save a
stream cap (429) and a store out of reach before the run (503).
"""

from typing import Any

from ag_ui.core import EventType, RunAgentInput
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from symfonic.core.contracts.errors import RequestError, UnknownAgent
from symfonic.server.agui.capabilities import capabilities_of
from symfonic.server.agui.run import agui_run
from symfonic.server.agui.stream import AguiEventStream
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host, Service
from symfonic.server.transport.errors import ErrorResponse, documented
from symfonic.turns.outcomes import PrimedTurn

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


router = APIRouter(tags=["ag-ui"], route_class=AuthenticatingRoute)


@router.post(
    "/v1/agui",
    response_class=AguiEventStream,
    status_code=200,
    summary="Run an agent with the AG-UI 1.0 protocol",
    responses=RUN_RESPONSES,
)
async def run(
    request: Request, run_input: RunAgentInput, caller: Caller, host: Host, service: Service
) -> AguiEventStream:
    """Run an agent on an AG-UI thread; the response is the run's AG-UI event stream."""
    # One of the caller's streams; the turn is a background run a later request can join.
    slot = service.shares.acquire(caller, request.scope, idle=False)
    try:
        started = await PrimedTurn.start(agui_run(host, caller, run_input, runs=service.runs))
    except BaseException:
        slot.release()
        raise
    return AguiEventStream(started, slot=slot)


@router.get(
    "/v1/agui/capabilities",
    summary="The AG-UI capabilities an agent declares",
    responses=CAPABILITIES_RESPONSES,
)
async def capabilities(caller: Caller, host: Host, agent: str | None = None) -> JSONResponse:
    """The AG-UI ``AgentCapabilities`` of ``agent`` (default: the service's first)."""
    try:
        chosen = host.agent(agent)
    except RequestError as error:
        return JSONResponse(
            {"error": {"code": error.code, "message": error.message}}, status_code=error.status
        )
    declared = capabilities_of(chosen)
    return JSONResponse(declared.model_dump(mode="json", by_alias=True))
