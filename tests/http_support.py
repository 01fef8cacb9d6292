"""Helpers the HTTP tests share: a client on the real app, SSE parsing, scripted agents."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import anyio
import httpx
import uvicorn
from fastapi import FastAPI
from langchain_core.messages import AIMessage, BaseMessage

from symfonic import SymfonicAgent
from symfonic.capabilities.human.tokens import PREFIX as TOKEN_PREFIX
from symfonic.core.contracts.store import PauseRecord
from symfonic.server.app import create_app
from symfonic.testing import ScriptedChatModel, call, current_turn, reply

JSON = {"Accept": "application/json"}
APPROVE = {"decision": "approve"}
KEYS = "alice=key-alice,bob=key-bob,carol=key-carol:approver"


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{name}"}


@dataclass(frozen=True)
class Frame:
    event: str
    data: dict[str, Any]
    id: str


def frames(text: str) -> list[Frame]:
    """Parse an SSE body; comments (keep-alive pings) are skipped."""
    out: list[Frame] = []
    for block in text.strip().split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.splitlines():
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields.setdefault(name, []).append(value)
        if "event" in fields:
            out.append(
                Frame(fields["event"][0], json.loads("\n".join(fields["data"])), fields["id"][0])
            )
    return out


class Clock:
    """A settable clock for agents: expiry without sleeping."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def position(messages: Sequence[BaseMessage]) -> int:
    """How many assistant messages the current turn already has."""
    return sum(isinstance(message, AIMessage) for message in current_turn(messages))


def scripted(*steps: AIMessage | Callable[[], AIMessage]) -> ScriptedChatModel:
    """Reply with step i of the turn; a callable step runs then (and may raise)."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        step = steps[min(position(messages), len(steps) - 1)]
        return step() if callable(step) else step

    return ScriptedChatModel(respond=respond)


class Gate:
    """A tool that waits until released: a turn held mid-run."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = anyio.Event()
        self.calls: list[int] = []

    async def pay(self, amount: int) -> str:
        """Pay an amount."""
        self.entered.set()
        try:
            await self.release.wait()
        except BaseException:
            self.cancelled.set()
            raise
        self.calls.append(amount)
        return f"paid {amount}"


def payment_agent(
    store: str,
    *,
    tool: Callable[..., Any] | None = None,
    after: Sequence[AIMessage | Callable[[], AIMessage]] = (reply("Paid."),),
    **options: Any,
) -> SymfonicAgent:
    """Asks to pay 5 (an approval), then follows ``after`` once resumed; ``note`` is ungated."""
    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    def note(text: str) -> str:
        """Write a note."""
        return f"noted {text}"

    options.setdefault("approval", {"pay"})
    return SymfonicAgent(
        model=scripted(call("pay", {"amount": 5}), *after),
        tools=[tool or pay, note],
        store=store,
        **options,
    )


@asynccontextmanager
async def serve(
    *agents: SymfonicAgent, api_keys: str = "", **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """The real app, its lifespan entered, behind an in-process httpx client."""
    options.setdefault("sweep_interval", 0)
    app = create_app(list(agents), api_keys=api_keys, **options)
    async with app.router.lifespan_context(app), client_of(app) as client:
        yield client


def client_of(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://symfonic")


async def new_session(client: httpx.AsyncClient, **headers: str) -> str:
    response = await client.post("/v1/sessions", json={}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["session_id"])


async def paused_turn(
    client: httpx.AsyncClient, headers: dict[str, str] | None = None, message: str = "pay 5"
) -> tuple[str, dict[str, Any]]:
    """A session whose first turn paused; returns (session id, turn.paused data)."""
    session_id = await new_session(client, **(headers or {}))
    response = await client.post(
        f"/v1/sessions/{session_id}/turns", json={"message": message}, headers=headers
    )
    assert response.status_code == 200, response.text
    last = frames(response.text)[-1]
    assert last.event == "turn.paused", last
    return session_id, last.data


class ServedPause(NamedTuple):
    """A payment agent behind the real app, and a session whose first turn paused."""

    agent: SymfonicAgent
    client: httpx.AsyncClient
    session_id: str
    paused: dict[str, Any]  # the ``turn.paused`` frame's data


@asynccontextmanager
async def served_pause(store_url: str, **options: Any) -> AsyncIterator[ServedPause]:
    """``payment_agent(store_url, **options)`` served, its first turn paused."""
    agent = payment_agent(store_url, **options)
    async with serve(agent) as client:
        session_id, paused = await paused_turn(client)
        yield ServedPause(agent, client, session_id, paused)


async def abandoning_turn(
    client: httpx.AsyncClient, session_id: str, message: str
) -> httpx.Response:
    """A new turn on ``session_id`` that abandons the pause it waits on, answered as JSON."""
    return await client.post(
        f"/v1/sessions/{session_id}/turns",
        json={"message": message, "on_pending_pause": "abandon"},
        headers=JSON,
    )


async def approved(client: httpx.AsyncClient, token: str) -> dict[str, Any]:
    """The JSON outcome of approving the pause ``token`` names."""
    response = await client.post(
        "/v1/resume", json={"token": token, "answer": APPROVE}, headers=JSON
    )
    return dict(response.json())


async def pause_row(agent: SymfonicAgent, pause_id: str) -> PauseRecord:
    pause = await agent.store.get_pause(pause_id)
    assert pause is not None
    return pause


async def within_a_second(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait for a state another task writes to the store, where no event can reach us."""
    with anyio.fail_after(1.0):
        while True:
            if await check():
                return
            await anyio.sleep(0.02)


async def audit_sealed(client: httpx.AsyncClient) -> dict[str, Any]:
    """Wait for the worker's sealer to give every committed audit record its place
    (it seals every 0.5 s; the bound is loose for a loaded machine); the last health."""
    with anyio.fail_after(3.0):
        while True:
            health: dict[str, Any] = (await client.get("/v1/health")).json()
            if health["audit_unsealed"] == 0:
                return health
            await anyio.sleep(0.05)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def respellings(token: str) -> list[str]:
    """Strings a lenient base64 decoder reads as ``token``'s bytes: none is the token."""
    body = token[len(TOKEN_PREFIX) :]
    middle = len(body) // 2
    standard = body.replace("-", "+").replace("_", "/")
    return [
        token + "=",
        token + "==",
        token + "\n",
        " " + token,
        TOKEN_PREFIX + body[:middle] + "!*\n" + body[middle:],
        TOKEN_PREFIX + body[:middle] + "=" + body[middle:],
        TOKEN_PREFIX + body[:middle] + " " + body[middle:],
        *([TOKEN_PREFIX + standard] if standard != body else []),
        "SFP_" + body,
    ]


@asynccontextmanager
async def uvicorn_serving(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app under a real uvicorn on a loopback port: streams arrive as they are sent."""
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [listening])
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                yield client
        finally:
            server.should_exit = True
