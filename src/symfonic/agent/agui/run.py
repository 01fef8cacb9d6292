"""One AG-UI run, start to end: plan it, run the symfonic turn, project its events.

Whatever happens, the stream is well formed: a refusal (anything that stops the
run before it starts) is a stream of exactly one ``RUN_ERROR``; a run that
started ends with exactly one ``RUN_FINISHED`` or ``RUN_ERROR``. The one
exception is a store out of reach before the run started: nothing was decided,
so it raises, and the route answers 503 with ``Retry-After`` as the native API
does. The symfonic stream is closed with ``aclosing``, so a client that goes
away mid-run closes the turn at once -- which is what moves a claimed pause to
``abandoned`` instead of leaving it claimed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from ag_ui.core import BaseEvent, RunAgentInput

from symfonic.agent.agui.mapping import RunProjection
from symfonic.agent.agui.threads import Acknowledge, Resume, plan_run
from symfonic.agent.service.host import ServiceHost
from symfonic.core.contracts.errors import RequestError, SessionPaused, StoreUnavailable
from symfonic.core.contracts.principal import Principal
from symfonic.turns.outcomes import error_event

INTERRUPTS_PENDING = "interrupts_pending"


def refusal(error: RequestError) -> tuple[str, str]:
    """The ``RUN_ERROR`` code and message for a run refused before it started."""
    if isinstance(error, SessionPaused):
        return (
            INTERRUPTS_PENDING,
            "this thread is waiting for an answer to its interrupt; send a run whose "
            "resume answers it (or cancels it)",
        )
    return error.code, error.message


async def agui_run(
    host: ServiceHost, principal: Principal, run_input: RunAgentInput
) -> AsyncGenerator[BaseEvent, None]:
    projection = RunProjection(run_input)
    try:
        plan = await plan_run(host, principal, run_input)
        if isinstance(plan, Acknowledge):
            for event in [*projection.start(), *projection.succeed()]:
                yield event
            return
        if isinstance(plan, Resume):
            projection.answered_tool_call_id = plan.pause.tool_call_id
        async with aclosing(plan.events(principal)) as events:
            async for symfonic_event in events:
                for event in projection.project(symfonic_event):
                    yield event
        if not projection.closed:
            for event in projection.fail("internal", "the run ended without an outcome"):
                yield event
    except RequestError as error:
        for event in projection.fail(*refusal(error)):
            yield event
    except Exception as error:
        if isinstance(error, StoreUnavailable) and not projection.started:
            raise  # nothing was claimed or started: the route answers 503
        failed = error_event(error)
        for event in projection.fail(failed.code, failed.message):
            yield event
