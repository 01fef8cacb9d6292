"""The floor with the model calls: the least any runtime on langchain-core can do.

The floor's three commits (:mod:`bench.workloads.floor`) with a cycle's two
model calls in their places, the first before the pause is recorded, the second
between the claim and the publish, each handed the whole conversation as a
``ChatPromptValue`` (langchain-core's cheapest input). The history is built once
and shared by every session, as if a runtime never read, decoded or rebuilt it:
no runtime that resumes from the store does less, so its share of the floor's
speed is the most of the floor one can reach.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompt_values import ChatPromptValue

from bench.history import TOOL_NAME, TOOL_RESULT, USER_MESSAGE
from bench.workloads.base import Workload, WorkloadError, WorkloadSpec, history_messages
from bench.workloads.floor import floor_for
from bench.workloads.scripted_model import ScriptedToolModel


class ModelFloor(Workload):
    system = "floor+model"

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__(spec)
        self._floor = floor_for(spec)
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

    def settings(self) -> dict[str, Any]:
        return self._floor.settings() | {"history": "built once, shared by every session"}
