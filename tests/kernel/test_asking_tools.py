"""A tool that asks a person mid-call stops its round there, and goes on when answered.

What ran before it in the round keeps its observation; what comes after it does
not run, and is answered "not dispatched" on resume. The tool goes on from the
continuation its pause kept, on an agent that never saw the pause.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import Field

from symfonic import SymfonicAgent
from symfonic.core.contracts.types import Answer, AnswerStatus, PauseState
from symfonic.kernel.tools import Question, ToolAsks
from symfonic.testing import ScriptedChatModel, calls, reply

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


class _Paint(BaseTool):
    """Paints the wall, asking which colour first."""

    name: str = "paint"
    description: str = "Paint the wall."
    answers: list[tuple[Any, Any, str]] = Field(default_factory=list)

    def _run(self, *args: Any, **kwargs: Any) -> str:
        raise ToolAsks(Question("Which colour?", SCHEMA, {"wall": kwargs["wall"], "asked": 1}))

    async def answered(
        self, continuation: Mapping[str, Any], answer: Answer, status: AnswerStatus, key: str
    ) -> str:
        self.answers.append((dict(continuation), answer, status))
        return f"painted the {continuation['wall']} wall {answer['colour']}"


def _lookups() -> tuple[list[str], Any]:
    ran: list[str] = []

    def lookup(q: str) -> str:
        """Look something up."""
        ran.append(q)
        return f"found {q}"

    return ran, lookup


def _model(seen: list[list[BaseMessage]]) -> ScriptedChatModel:
    script = ScriptedChatModel.from_script(
        [
            calls(
                ("lookup", {"q": "before"}, "c1"),
                ("paint", {"wall": "north"}, "c2"),
                ("lookup", {"q": "after"}, "c3"),
            ),
            reply("Done."),
        ]
    )

    def respond(messages: list[BaseMessage]) -> AIMessage | str:
        seen.append(list(messages))
        return script.respond(messages)

    return ScriptedChatModel(respond=respond)


async def test_a_tool_that_asks_stops_its_round_and_goes_on_from_its_continuation(
    store_url: str,
) -> None:
    ran, lookup = _lookups()
    seen: list[list[BaseMessage]] = []
    async with SymfonicAgent(
        model=_model(seen), tools=[lookup, _Paint()], store=store_url
    ) as first:
        paused = await first.run("paint the north wall")
    assert paused.pause is not None
    assert (paused.pause.kind.value, paused.pause.query) == ("form", "Which colour?")
    assert paused.pause.response_schema == SCHEMA
    assert ran == ["before"]  # what came before the question ran; what comes after did not

    painter = _Paint()
    async with SymfonicAgent(
        model=_model(seen), tools=[lookup, painter], store=store_url
    ) as second:
        checkpoint = await second.store.load_checkpoint(paused.pause.pause_id)
        assert checkpoint is not None and checkpoint.format_version == 2
        done = await second.resume(paused.pause.token, {"colour": "blue"})
        assert (done.status, done.answer) == ("complete", "Done.")
        answered = await second.store.get_pause(paused.pause.pause_id)
        assert answered is not None and answered.state is PauseState.PUBLISHED
    assert painter.answers == [({"wall": "north", "asked": 1}, {"colour": "blue"}, "resolved")]
    assert ran == ["before"]
    results = {m.tool_call_id: m for m in seen[-1] if isinstance(m, ToolMessage)}
    assert (results["c1"].name, results["c1"].content) == ("lookup", "found before")
    assert (results["c2"].name, results["c2"].content) == ("paint", "painted the north wall blue")
    assert str(results["c3"].content).startswith("not dispatched")
