"""A model that thinks for three leases keeps its turn: a first turn, a resume and a
delegate's turn each publish, and a second message meanwhile is refused. A run started
from Python stops at once when another worker cancels it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from symfonic import SymfonicAgent, TurnResult
from symfonic.core.contracts.errors import SessionBusy
from symfonic.core.contracts.sessions import SessionRecord
from symfonic.core.contracts.types import PauseState, ToolResultEvent
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

LEASE = 0.5
THINKING = 3 * LEASE


class ThinkingModel(ScriptedChatModel):
    """Sends nothing for ``thinking`` seconds before each reply."""

    thinking: float = THINKING

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        await anyio.sleep(self.thinking)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


def thinking(*script: Any, seconds: float = THINKING) -> ThinkingModel:
    scripted = ScriptedChatModel.from_script(list(script))
    return ThinkingModel(respond=scripted.respond, thinking=seconds)


async def sweeping(agent: SymfonicAgent) -> None:
    """Another worker's sweeper, as often as it may run: it takes back any hold that lapsed."""
    while True:
        await agent.sweep()
        await anyio.sleep(LEASE / 5)


async def test_a_first_turn_keeps_its_session_while_the_model_thinks(store_url: str) -> None:
    model = thinking(reply("Thought it over."))
    agent = SymfonicAgent(model=model, store=store_url, run_lease=LEASE)
    async with agent, anyio.create_task_group() as tasks:
        session_id = await agent.create_session()
        tasks.start_soon(sweeping, agent)
        ended = anyio.Event()
        first: list[TurnResult] = []

        async def attached() -> None:  # not a background run, which renews its own marker
            first.append(await agent.run("think", session_id))
            ended.set()

        tasks.start_soon(attached)
        await anyio.sleep(2 * LEASE)  # past the lease the turn began with
        with pytest.raises(SessionBusy):
            await agent.run("me too", session_id)
        await ended.wait()
        tasks.cancel_scope.cancel()
    assert (first[0].status, first[0].answer, first[0].revision) == (
        "complete",
        "Thought it over.",
        1,
    )


async def test_a_resume_keeps_its_claim_while_the_model_thinks(store_url: str) -> None:
    paid: list[int] = []

    async def pay(amount: int) -> str:
        """Pay once a person approves."""
        paid.append(amount)
        return f"paid {amount}"

    model = thinking(call("pay", {"amount": 7}), reply("Paid."))
    agent = SymfonicAgent(
        model=model, tools=[pay], approval={"pay"}, store=store_url, claim_lease=LEASE
    )
    async with agent:
        paused = await agent.run("pay 7")
        assert paused.pause is not None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sweeping, agent)
            done = await agent.resume(paused.pause.token, {"decision": "approve"})
            tasks.cancel_scope.cancel()
        row = await agent.store.get_pause(paused.pause.pause_id)
    assert (done.status, done.answer, paid) == ("complete", "Paid.", [7])
    assert row is not None and row.state is PauseState.PUBLISHED


async def test_a_delegates_turn_keeps_its_session_while_its_model_thinks(store_url: str) -> None:
    child = SymfonicAgent(name="helper", model=thinking(reply("helped")), store=store_url)
    front = SymfonicAgent(
        name="front",
        model=ScriptedChatModel.from_script([call("helper", {"task": "help"}), reply("done")]),
        delegates=[child.as_tool(name="helper", description="Helps.")],
        store=store_url,
        run_lease=LEASE,
    )
    async with front:
        made: list[SessionRecord] = []
        delegated = anyio.Event()
        create = front.store.create_session

        async def recorded(session: SessionRecord) -> None:
            made.append(session)
            await create(session)
            if session.agent == "helper":
                delegated.set()

        front.store.create_session = recorded  # type: ignore[method-assign]
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sweeping, front)
            handle = await front.start("get help", tasks=tasks)
            await delegated.wait()
            await anyio.sleep(2 * LEASE)  # past the lease the delegate's turn began with
            child_session = await front.store.get_session(made[-1].session_id)
            done = await handle.join()
            tasks.cancel_scope.cancel()
    assert child_session is not None and child_session.running
    answered = [(e.status, e.content) for e in done.events if isinstance(e, ToolResultEvent)]
    assert (done.status, answered) == ("complete", [("ok", "helped")])


@pytest.mark.postgres
async def test_a_run_started_from_python_stops_within_a_second_of_a_cancel_elsewhere(
    postgres_url: str,
) -> None:
    """The run's own lease is ten minutes: only the watch of the store can stop it in time."""
    runner = SymfonicAgent(model=thinking(reply("never"), seconds=3600), store=postgres_url)
    other = SymfonicAgent(model=thinking(reply("never")), store=postgres_url)
    async with runner, other, anyio.create_task_group() as tasks:
        handle = await runner.start("think for an hour", tasks=tasks)
        await anyio.sleep(0.5)  # the model is thinking
        assert handle.run_id is not None
        await other.cancel_run(handle.run_id)
        cancelled_at = anyio.current_time()
        with anyio.fail_after(5):
            await handle.wait()
        took = anyio.current_time() - cancelled_at
        record = await other.get_run(handle.run_id)
    assert took < 1.0, f"the run stopped {took:.2f}s after its cancel"
    assert record.state.value == "cancelled"
