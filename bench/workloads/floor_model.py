"""The floor with the model calls: the least any runtime on langchain-core can do.

The floor (:mod:`bench.workloads.floor_sqlite`, :mod:`bench.workloads.floor_postgres`)
is the database alone. A runtime built on langchain-core also calls its model
twice a cycle through ``ainvoke``, the turn that pauses and the turn that resumes,
each time with the whole conversation, and that cost is langchain-core's, paid
whatever the runtime does around it. This system is the floor's three commits with
those two calls in their places: the first before the pause is recorded, the
second between the claim and the publish, on the same scripted model the other
systems use, handed a ``ChatPromptValue`` (langchain-core's cheapest input).

Nothing else: the history is a tuple of langchain-core messages built once and
shared by every session, as if a runtime kept each conversation in memory and
never read, decoded or rebuilt it. A runtime whose resume must work on any
worker from the store alone does all of that; this one does none of it, so its
speed is a bound no such runtime passes, and its share of the floor's speed is
the most of the floor one can reach.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompt_values import ChatPromptValue

from bench.history import TOOL_NAME, TOOL_RESULT, USER_MESSAGE
from bench.workloads import workload_class
from bench.workloads.base import Workload, WorkloadError, WorkloadSpec, history_messages
from bench.workloads.floor_rows import Floor
from bench.workloads.scripted_model import ScriptedToolModel


def _floor(spec: WorkloadSpec) -> Floor:
    """The store's own floor, as the harness runs it."""
    floor = workload_class("floor", spec.store)(spec)
    if not isinstance(floor, Floor):
        raise TypeError(f"the {spec.store} floor does not split its cycle into commits")
    return floor


class ModelFloor(Workload):
    system = "floor+model"

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__(spec)
        self._floor = _floor(spec)
        self._model = ScriptedToolModel()
        self._history = tuple(history_messages(spec.history))

    async def open(self) -> None:
        await self._floor.open()

    async def setup(self) -> None:
        await self._floor.setup()

    async def add_sessions(self, count: int) -> list[str]:
        return await self._floor.add_sessions(count)

    async def _call_model(self, turn: list[BaseMessage]) -> AIMessage:
        prompt = ChatPromptValue.model_construct(messages=[*self._history, *turn])
        reply = await self._model.ainvoke(prompt)
        if not isinstance(reply, AIMessage):
            raise WorkloadError(f"the model answered with a {type(reply).__name__}")
        return reply

    async def pause(self, session: str) -> Any:
        human = HumanMessage(USER_MESSAGE)
        call = await self._call_model([human])
        if [c["name"] for c in call.tool_calls] != [TOOL_NAME]:
            raise WorkloadError(f"the first model call did not ask for {TOOL_NAME}")
        row = await self._floor.pause(session)
        return row, [human, call]

    async def resume(self, session: str, handle: Any) -> None:
        row, turn = handle
        claim_id = await self._floor.claim(row)
        result = ToolMessage(TOOL_RESULT, tool_call_id=turn[-1].tool_calls[0]["id"])
        answer = await self._call_model([*turn, result])
        if answer.tool_calls:
            raise WorkloadError("the second model call asked for a tool again")
        await self._floor.publish(session, row, claim_id)

    async def close(self) -> None:
        await self._floor.close()

    def versions(self) -> dict[str, str]:
        return self._floor.versions()

    def settings(self) -> dict[str, Any]:
        return self._floor.settings() | {"history": "built once, shared by every session"}
