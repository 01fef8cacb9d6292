"""`POST /v1/resume`: answer a pause with its token, in the body only, and run the turn on.

Everything that can refuse the answer is checked before the claim.
"""

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from symfonic.core.contracts.wire import RunStarted
from symfonic.server.http.negotiate import respond
from symfonic.server.http.openapi import resume_accepted_response, turn_responses
from symfonic.server.http.schemas import ResumeRequest, TurnOutcome
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host, Service
from symfonic.server.transport.errors import documented

router = APIRouter(prefix="/v1", tags=["pauses"], route_class=AuthenticatingRoute)


@router.post(
    "/resume",
    response_model=None,
    responses={
        **turn_responses(
            "The resumed turn's events as SSE (default), or its outcome as JSON with "
            "`Accept: application/json`. An identical repeat of a resume that already "
            "completed returns its outcome again without running anything."
        ),
        **resume_accepted_response(),
        **documented(400, 401, 403, 404, 409, 410, 413, 415, 422, 429, 503),
    },
    summary="Answer a pause and run its turn on",
)
async def resume(
    body: ResumeRequest, request: Request, principal: Caller, host: Host, service: Service
) -> Response:
    agent, resolved = await host.resolve(body.token)
    if body.background:
        started = await service.in_background(
            principal,
            lambda tasks: agent.start_resume(
                resolved,
                body.answer,
                principal,
                tasks=tasks,
                status=body.status,
                args_digest=body.args_digest,
                started=service.runs.track,
            ),
        )
        if started.run_id is None:  # an approval counted toward a quorum: nothing ran
            outcome = TurnOutcome.of(await started.join()).model_dump(mode="json")
            return JSONResponse(outcome, status_code=202)
        return JSONResponse(RunStarted.of(started.run_id).model_dump(), status_code=202)
    events = agent.resume_stream(
        resolved, body.answer, principal, status=body.status, args_digest=body.args_digest
    )
    session_id = resolved.pause.session_id
    events = service.runs.then_queued(agent, session_id, events)
    return await respond(request, events, service.shares, principal)
