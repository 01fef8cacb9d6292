"""``POST /v1/agui`` and ``GET /v1/agui/capabilities`` as a caller meets them: auth,
threads and their owners, the input a run needs, and the declared capabilities."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from ag_ui.core import (
    AgentCapabilities,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
)
from langchain_core.messages import BaseMessage, HumanMessage

from agui_support import AguiClient, agui_app, finished, run_body, types
from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import UnknownAgent
from symfonic.core.contracts.types import PauseState
from symfonic.core.messages import text_of
from symfonic.demo import demo_agent
from symfonic.server.service.host import ServiceHost
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio


def echo() -> SymfonicAgent:
    def respond(messages: list[BaseMessage]) -> Any:
        said = [text_of(m) for m in messages if isinstance(m, HumanMessage)]
        return reply(f"You said: {said[-1]}")

    return SymfonicAgent(name="echo", model=ScriptedChatModel(respond=respond))


@pytest.fixture
async def host(sqlite_url: str) -> AsyncIterator[ServiceHost]:
    served = ServiceHost([echo(), demo_agent()], store=sqlite_url)
    await served.open()
    yield served
    await served.aclose()


@pytest.fixture
async def client(host: ServiceHost) -> AsyncIterator[AguiClient]:
    agui = AguiClient(agui_app(host))
    yield agui
    await agui.aclose()


def error_of(events: list[Any], code: str) -> RunErrorEvent:
    assert types(events) == ["RUN_ERROR"]
    assert events[0].code == code, events[0].message
    return events[0]  # type: ignore[no-any-return]


async def test_a_run_streams_text_and_echoes_its_input(client: AguiClient) -> None:
    body = run_body(f"t-{uuid.uuid4().hex}", "hello there")
    events = await client.run(body)
    assert types(events) == [
        "RUN_STARTED", "TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * 4,
        "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]
    started = events[0]
    assert isinstance(started, RunStartedEvent)
    assert started.protocol_version == "1.0"
    assert (started.thread_id, started.run_id) == (body["threadId"], body["runId"])
    assert started.input == RunAgentInput.model_validate(body)
    text = "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))
    assert text == "You said: hello there"
    done = finished(events)
    assert isinstance(done.outcome, RunFinishedSuccessOutcome)
    assert (done.thread_id, done.run_id) == (body["threadId"], body["runId"])
    assert done.result == {"answer": text, "revision": 1}


async def test_an_unknown_thread_becomes_the_callers_session(
    client: AguiClient, host: ServiceHost
) -> None:
    thread = str(uuid.uuid4())
    await client.run(run_body(thread, "one"))
    done = finished(await client.run(run_body(thread, "two")))
    assert done.result == {"answer": "You said: two", "revision": 2}
    session = await host.store.get_session(thread)
    assert session is not None
    assert (session.principal, session.agent, session.revision) == ("alice", "echo", 2)


async def test_forwarded_props_choose_the_agent_of_a_new_thread(
    client: AguiClient, host: ServiceHost
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    events = await client.run(run_body(thread, "hi", forwardedProps={"agent": "assistant"}))
    assert "alice, bob, carol" in finished(events).result["answer"]
    assert (await host.store.get_session(thread)).agent == "assistant"  # type: ignore[union-attr]
    unknown = f"t-{uuid.uuid4().hex}"
    error_of(await client.run(run_body(unknown, "hi", forwardedProps={"agent": "nobody"})),
             "unknown_agent")
    assert await host.store.get_session(unknown) is None


async def test_another_principals_thread_is_refused_like_an_unknown_one(
    client: AguiClient, host: ServiceHost
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    await client.run(run_body(thread, "secret plans"))
    theirs = error_of(await client.run(run_body(thread, "hi"), key="bob-key"), "thread_not_found")
    entry = {"interruptId": "sfp_x", "status": "resolved", "payload": 1}
    unknown = error_of(
        await client.run(run_body(f"t-{uuid.uuid4().hex}", resume=[entry]), key="bob-key"),
        "thread_not_found",
    )
    assert theirs.message.replace(thread, "?") == unknown.message.replace(
        unknown.message.split("'")[1], "?"
    )
    assert (await host.store.get_session(thread)).revision == 1  # type: ignore[union-attr]


async def test_input_a_run_cannot_use_is_refused_before_anything_is_written(
    client: AguiClient, host: ServiceHost
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    error_of(await client.run(run_body(thread)), "invalid_input")
    error_of(await client.run(run_body(thread, "   ")), "invalid_input")
    assert await host.store.get_session(thread) is None
    error_of(await client.run(run_body("../etc", "hi")), "invalid_input")
    error_of(await client.run(run_body("x" * 65, "hi")), "invalid_input")


async def test_the_last_user_message_is_the_turn(client: AguiClient) -> None:
    body = run_body(f"t-{uuid.uuid4().hex}", "first")
    body["messages"] += [
        {"id": "a1", "role": "assistant", "content": "ok"},
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "second"}]},
    ]
    assert finished(await client.run(body)).result["answer"] == "You said: second"


async def test_auth_is_the_native_apis(client: AguiClient) -> None:
    body = run_body(f"t-{uuid.uuid4().hex}", "hi")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "alice-key"}):
        response = await client.http.post("/v1/agui", json=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
    response = await client.http.get("/v1/agui/capabilities")
    assert response.status_code == 401


async def test_a_body_that_is_not_run_agent_input_is_422(client: AguiClient) -> None:
    auth = {"Authorization": "Bearer alice-key"}
    for body in ({}, {"threadId": "t", "runId": "r"}, {"threadId": "t", "runId": "r",
                                                        "messages": [{"role": "wizard"}]}):
        response = await client.http.post("/v1/agui", json=body, headers=auth)
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "invalid_request"


async def test_a_body_that_cannot_be_read_is_400_as_documented(client: AguiClient) -> None:
    auth = {"Authorization": "Bearer alice-key", "Content-Type": "application/json"}
    document = (await client.http.get("/openapi.json")).json()
    declared = document["paths"]["/v1/agui"]["post"]["responses"]
    for body in (b"[" * 10_000, b"\xff", b"{not json"):
        response = await client.http.post("/v1/agui", content=body, headers=auth)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "bad_request"
    assert declared["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"
    }


async def test_capabilities_declare_interrupts_and_approve_with_edits(
    client: AguiClient,
) -> None:
    auth = {"Authorization": "Bearer alice-key"}
    response = await client.http.get("/v1/agui/capabilities?agent=assistant", headers=auth)
    assert response.status_code == 200
    declared = AgentCapabilities.model_validate(response.json())
    assert response.json()["humanInTheLoop"] == {
        "supported": True, "approvals": True, "interrupts": True, "approveWithEdits": True,
    }
    assert declared.identity is not None and declared.identity.name == "assistant"
    assert declared.tools is not None and declared.tools.items is not None
    assert {t.name for t in declared.tools.items} == {"lookup_contact", "send_payment"}

    plain = (await client.http.get("/v1/agui/capabilities", headers=auth)).json()
    assert plain["identity"]["name"] == "echo"
    assert plain["humanInTheLoop"]["interrupts"] is True
    assert plain["humanInTheLoop"]["approveWithEdits"] is False

    missing = await client.http.get("/v1/agui/capabilities?agent=nobody", headers=auth)
    assert missing.status_code == UnknownAgent.status
    assert missing.json()["error"]["code"] == "unknown_agent"


async def test_a_client_that_goes_away_mid_resume_leaves_no_claim_behind(
    sqlite_url: str,
) -> None:
    """On an app whose lifespan did not run (mounted in another), the turn lives inside
    its request: a disconnect while the approved tool runs closes it at once, and the
    pause is ``abandoned``, never left ``claimed``. (Under the lifespan the turn goes
    on instead: tests/agui/test_joining.py.)"""
    running = anyio.Event()

    async def slow_send(to: str) -> str:
        """Send something, slowly."""
        running.set()
        await anyio.sleep_forever()
        return "unreachable"

    model = ScriptedChatModel.from_script([call("slow_send", {"to": "bob"}), reply("done")])
    agent = SymfonicAgent(name="slow", model=model, tools=[slow_send], approval={"slow_send"})
    host = ServiceHost([agent], store=sqlite_url)
    await host.open()
    app = agui_app(host)
    thread = f"t-{uuid.uuid4().hex}"
    client = AguiClient(app)
    outcome = finished(await client.run(run_body(thread, "send it"))).outcome
    await client.aclose()
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    entry = {"interruptId": outcome.interrupts[0].id, "status": "resolved",
             "payload": {"approved": True}}

    request = json.dumps(run_body(thread, resume=[entry])).encode()
    gone = anyio.Event()
    received: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if not received:
            received.append(request)
            return {"type": "http.request", "body": request, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        received.append(message.get("body", b""))

    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1", "method": "POST", "scheme": "http", "path": "/v1/agui",
        "raw_path": b"/v1/agui", "query_string": b"", "root_path": "",
        "headers": [(b"content-type", b"application/json"),
                    (b"authorization", b"Bearer alice-key")],
        "client": ("127.0.0.1", 5000), "server": ("agui.test", 80),
    }
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(app, scope, receive, send)
                await running.wait()
                [pause] = await host.store.session_pauses(thread)
                assert pause.state is PauseState.CLAIMED
                gone.set()
        [pause] = await host.store.session_pauses(thread)
        assert pause.state is PauseState.ABANDONED
        assert b"RUN_STARTED" in b"".join(received[1:])
    finally:
        await host.aclose()
