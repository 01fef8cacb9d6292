"""An agent that delegates to another, on SQLite and PostgreSQL.

The parent calls the child as a tool with a task; the child runs in a session of
its own. When the child pauses, the parent's turn pauses with the child's
question, and one token answers it: the child runs on from its checkpoint, its
answer becomes the parent's observation, and the parent runs on, in the same
resume. Every list of messages either model is sent, and both published
histories, pass the strict-provider check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic import (
    ConfigurationError,
    PauseAlreadyAnswered,
    PauseNotFound,
    SymfonicAgent,
)
from symfonic.agent.cutover.rehydration import NOT_DISPATCHED
from symfonic.core.contracts.types import (
    InteractionKind,
    PauseState,
    ToolResultEvent,
    TurnResult,
)
from symfonic.core.messages import messages_of, text_of
from symfonic.kernel.limits import Limits
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply
from test_transcript_property import assert_strict

pytestmark = pytest.mark.anyio

APPROVE = {"decision": "approve"}


@dataclass
class Desk:
    """Both agents' side effects, and every message list each model was sent."""

    charged: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sent: dict[str, list[list[BaseMessage]]] = field(default_factory=dict)

    def charge(self, amount: int) -> str:
        """Charge the customer an amount."""
        self.charged.append(amount)
        return f"charged {amount}"

    def note(self, text: str) -> str:
        """Write a note."""
        self.notes.append(text)
        return f"noted {text}"

    def model(self, name: str, *rounds: AIMessage, final: str = "") -> ScriptedChatModel:
        """Round i of a turn is ``rounds[i]``; past the end, a final answer quoting
        the last observation."""

        def respond(messages: list[BaseMessage]) -> AIMessage:
            self.sent.setdefault(name, []).append(list(messages))
            turn = current_turn(messages)
            position = sum(isinstance(m, AIMessage) for m in turn)
            if position < len(rounds):
                return rounds[position]
            told = [text_of(m) for m in turn if isinstance(m, ToolMessage)]
            return reply(f"{final}{told[-1] if told else 'nothing'}")

        return ScriptedChatModel(respond=respond)

    def check_strict(self, *histories: Sequence[BaseMessage]) -> None:
        for name, sent in self.sent.items():
            for i, messages in enumerate(sent):
                assert_strict(messages, f"{name} model call {i}")
        for history in histories:
            assert_strict(history, "published history")


def billing(desk: Desk, store_url: str, *rounds: AIMessage, **options: Any) -> SymfonicAgent:
    """The child: charges once a person approves, then answers with what it did."""
    return SymfonicAgent(
        name="billing",
        model=desk.model(
            "billing", *(rounds or (calls(("charge", {"amount": 5}, "c1")),)), final="billing: "
        ),
        tools=[desk.charge],
        approval={"charge"},
        store=store_url,
        **options,
    )


def front(
    desk: Desk, store_url: str, child: SymfonicAgent, *rounds: AIMessage, **options: Any
) -> SymfonicAgent:
    """The parent: hands the task to billing, then answers with what billing said."""
    return SymfonicAgent(
        name="front",
        model=desk.model(
            "front",
            *(rounds or (calls(("billing", {"task": "charge 5"}, "d1")),)),
            final="front: ",
        ),
        delegates=[child.as_tool(name="billing", description="Billing: charges customers.")],
        store=store_url,
        **options,
    )


def _results(result: TurnResult) -> dict[str, tuple[str, str]]:
    return {
        e.tool_call_id: (e.status, e.content)
        for e in result.events
        if isinstance(e, ToolResultEvent)
    }


async def _child_session(agent: SymfonicAgent, parent_pause_id: str) -> str:
    parent = await agent.store.get_pause(parent_pause_id)
    assert parent is not None and parent.delegated_pause_id is not None
    child = await agent.store.get_pause(parent.delegated_pause_id)
    assert child is not None
    return child.session_id


async def _history(agent: SymfonicAgent, session_id: str) -> list[BaseMessage]:
    session = await agent.store.get_session(session_id)
    assert session is not None
    return messages_of(await agent.store.history(session_id, session.revision))


async def test_approving_the_childs_tool_runs_it_once_and_completes_both(store_url: str) -> None:
    desk = Desk()
    parent = front(desk, store_url, billing(desk, store_url))
    async with parent:
        paused = await parent.run("please charge the customer", principal="alice")
        assert paused.status == "paused" and paused.pause is not None
        pause = paused.pause
        # One pause the person sees: the child's question, naming both agents.
        assert pause.kind is InteractionKind.APPROVAL and pause.sub_agent == "billing"
        assert pause.query == "Approve charge?" and pause.tool_call_id == "d1"
        assert "oneOf" in pause.response_schema
        row = await parent.store.get_pause(pause.pause_id)
        assert row is not None and row.agent == "front" and row.sub_agent == "billing"
        child_id = await _child_session(parent, pause.pause_id)
        child_session = await parent.store.get_session(child_id)
        assert child_session is not None and child_session.principal == "alice"
        assert child_session.metadata["parent_session_id"] == paused.session_id
        assert child_session.metadata["parent_tool_call_id"] == "d1"
        assert child_session.agent == "billing"
        assert [p.pause_id for p in await parent.pauses("alice")] == [pause.pause_id]
        assert desk.charged == []

        done = await parent.resume(pause.token, APPROVE, principal="alice")
        assert done.status == "complete", done.error
        assert desk.charged == [5]
        assert done.answer == "front: billing: charged 5"
        assert _results(done)["d1"] == ("ok", "billing: charged 5")
        # Both sessions' revisions grew by one.
        assert (await parent.store.get_session(paused.session_id)).revision == 1  # type: ignore[union-attr]
        assert (await parent.store.get_session(child_id)).revision == 1  # type: ignore[union-attr]
        assert row.delegated_pause_id is not None
        child = await parent.store.get_pause(row.delegated_pause_id)
        assert child is not None and child.state is PauseState.PUBLISHED
        assert child.answered_by == "alice" and child.answer == APPROVE
        assert child.parent_session_id == paused.session_id
        parent_row = await parent.store.get_pause(pause.pause_id)
        assert parent_row is not None and parent_row.state is PauseState.PUBLISHED
        child_history = await _history(parent, child_id)
        assert isinstance(child_history[0], HumanMessage) and child_history[0].content == "charge 5"
        desk.check_strict(await _history(parent, paused.session_id), child_history)


@pytest.mark.parametrize(
    ("answer", "observed"),
    [
        ({"decision": "reject", "reason": "too much"}, "too much"),
        ({"decision": "edit", "args": {"amount": 3}}, "charged 3"),
    ],
    ids=["reject", "edit"],
)
async def test_reject_and_edit_reach_the_childs_transcript(
    store_url: str, answer: dict[str, Any], observed: str
) -> None:
    desk = Desk()
    parent = front(desk, store_url, billing(desk, store_url))
    async with parent:
        paused = await parent.run("charge", principal="alice")
        assert paused.pause is not None
        child_id = await _child_session(parent, paused.pause.pause_id)
        done = await parent.resume(paused.pause.token, answer, principal="alice")
        assert done.status == "complete", done.error
        child_history = await _history(parent, child_id)
        observation = next(m for m in child_history if isinstance(m, ToolMessage))
        assert observation.tool_call_id == "c1" and observed in text_of(observation)
        assert desk.charged == ([3] if answer["decision"] == "edit" else [])
        assert observed in (done.answer or "")
        desk.check_strict(await _history(parent, paused.session_id), child_history)


async def test_a_child_that_pauses_twice_keeps_the_parent_paused_until_the_second_answer(
    store_url: str,
) -> None:
    desk = Desk()
    child = billing(
        desk,
        store_url,
        calls(("ask_human", {"question": "Which customer?"}, "q1")),
        calls(("charge", {"amount": 7}, "c2")),
    )
    parent = front(desk, store_url, child)
    async with parent:
        first = await parent.run("charge someone", principal="alice")
        assert first.pause is not None and first.pause.kind is InteractionKind.INPUT
        assert first.pause.query == "Which customer?" and first.pause.sub_agent == "billing"

        second = await parent.resume(first.pause.token, "ann", principal="alice")
        assert second.status == "paused" and second.pause is not None, second.error
        assert second.pause.kind is InteractionKind.APPROVAL and second.pause.sub_agent == "billing"
        assert second.pause.tool_call_id == "d1"
        old = await parent.store.get_pause(first.pause.pause_id)
        new = await parent.store.get_pause(second.pause.pause_id)
        assert old is not None and new is not None
        assert old.state is PauseState.SUPERSEDED and new.supersedes == old.pause_id
        old_child = await parent.store.get_pause(old.delegated_pause_id or "")
        new_child = await parent.store.get_pause(new.delegated_pause_id or "")
        assert old_child is not None and new_child is not None
        assert old_child.state is PauseState.SUPERSEDED
        assert new_child.supersedes == old_child.pause_id
        assert new_child.session_id == old_child.session_id
        assert [p.pause_id for p in await parent.pauses("alice")] == [new.pause_id]
        assert desk.charged == []

        done = await parent.resume(second.pause.token, APPROVE, principal="alice")
        assert done.status == "complete", done.error
        assert desk.charged == [7] and done.answer == "front: billing: charged 7"
        assert (await parent.store.get_session(first.session_id)).revision == 1  # type: ignore[union-attr]
        assert (await parent.store.get_session(new_child.session_id)).revision == 1  # type: ignore[union-attr]
        desk.check_strict(
            await _history(parent, first.session_id),
            await _history(parent, new_child.session_id),
        )


async def test_two_delegations_in_one_round_stop_at_the_first_and_skip_the_rest(
    store_url: str,
) -> None:
    desk = Desk()
    parent = SymfonicAgent(
        name="front",
        model=desk.model(
            "front",
            calls(
                ("note", {"text": "x"}, "n1"),
                ("billing", {"task": "charge 5"}, "d1"),
                ("billing", {"task": "charge 5 again"}, "d2"),
            ),
            final="front: ",
        ),
        tools=[desk.note],
        delegates=[billing(desk, store_url)],
        store=store_url,
    )
    async with parent:
        paused = await parent.run("charge twice", principal="alice")
        assert paused.pause is not None and paused.pause.tool_call_id == "d1"
        # The first delegate's pause stopped the round: the second never ran its
        # child, and the ordinary call before them did not run either.
        assert len(desk.sent["billing"]) == 1 and desk.notes == []
        done = await parent.resume(paused.pause.token, APPROVE, principal="alice")
        assert done.status == "complete", done.error
        results = _results(done)
        assert results["d1"] == ("ok", "billing: charged 5")
        assert results["d2"] == ("not_dispatched", NOT_DISPATCHED)
        assert results["n1"] == ("not_dispatched", NOT_DISPATCHED)
        assert desk.charged == [5] and desk.notes == []
        assert len(desk.sent["billing"]) == 2
        pauses = await parent.store.session_pauses(paused.session_id)
        assert len({p.pause_id for p in pauses}) == len(pauses) == 1
        desk.check_strict(await _history(parent, paused.session_id))


async def test_replay_returns_the_outcome_a_different_answer_409_and_the_childs_token_404(
    store_url: str,
) -> None:
    desk = Desk()
    parent = front(desk, store_url, billing(desk, store_url))
    async with parent:
        paused = await parent.run("charge", principal="alice")
        assert paused.pause is not None
        row = await parent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.delegated_pause_id is not None
        # The delegate's own pause is never answerable by a token of its own.
        child_token = parent.settlement.signer.mint(row.delegated_pause_id)
        with pytest.raises(PauseNotFound):
            await parent.resume(child_token, APPROVE, principal="alice")
        done = await parent.resume(paused.pause.token, APPROVE, principal="alice")
        again = await parent.resume(paused.pause.token, APPROVE, principal="alice")
        assert (again.status, again.answer, again.revision) == (
            done.status, done.answer, done.revision,
        )
        with pytest.raises(PauseAlreadyAnswered):
            await parent.resume(paused.pause.token, {"decision": "reject"}, principal="alice")
        assert desk.charged == [5]


async def test_a_new_turn_that_abandons_the_pause_abandons_the_childs_too(store_url: str) -> None:
    desk = Desk()
    parent = front(desk, store_url, billing(desk, store_url))
    async with parent:
        paused = await parent.run("charge", principal="alice")
        assert paused.pause is not None
        row = await parent.store.get_pause(paused.pause.pause_id)
        assert row is not None
        after = await parent.run(
            "never mind", paused.session_id, principal="alice", on_pending_pause="abandon"
        )
        assert after.status == "paused"  # the script delegates again
        for pause_id in (row.pause_id, row.delegated_pause_id):
            gone = await parent.store.get_pause(pause_id or "")
            assert gone is not None and gone.state is PauseState.ABANDONED


async def test_a_failure_after_the_child_published_abandons_only_the_parent(
    store_url: str,
) -> None:
    desk = Desk()
    failing: list[bool] = []

    def respond(messages: list[BaseMessage]) -> AIMessage:
        desk.sent.setdefault("front", []).append(list(messages))
        if any(isinstance(m, ToolMessage) for m in current_turn(messages)):
            failing.append(True)
            raise RuntimeError("the parent's model is down")
        return calls(("billing", {"task": "charge 5"}, "d1"))

    parent = SymfonicAgent(
        name="front",
        model=ScriptedChatModel(respond=respond),
        delegates=[billing(desk, store_url)],
        store=store_url,
    )
    async with parent:
        paused = await parent.run("charge", principal="alice")
        assert paused.pause is not None
        failed = await parent.resume(paused.pause.token, APPROVE, principal="alice")
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == "model_error" and failing
        row = await parent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.ABANDONED
        child = await parent.store.get_pause(row.delegated_pause_id or "")
        assert child is not None and child.state is PauseState.PUBLISHED
        assert desk.charged == [5]
        assert (await parent.store.get_session(paused.session_id)).revision == 0  # type: ignore[union-attr]
        # The parent session stays usable.
        assert (await parent.store.open_pause(paused.session_id)) is None


async def test_a_child_that_cannot_finish_is_an_error_the_parent_reads(store_url: str) -> None:
    desk = Desk()
    child = billing(
        desk,
        store_url,
        calls(("charge", {"amount": 5}, "c1")),
        calls(("ask_human", {"question": "again?"}, "q1")),
        limits=Limits(max_tool_rounds=1),
    )
    parent = front(desk, store_url, child)
    async with parent:
        paused = await parent.run("charge", principal="alice")
        assert paused.pause is not None
        done = await parent.resume(paused.pause.token, APPROVE, principal="alice")
        assert done.status == "complete", done.error
        status, content = _results(done)["d1"]
        assert status == "error" and "billing could not finish" in content
        assert "tool limit" in content
        row = await parent.store.get_pause(paused.pause.pause_id)
        child_row = await parent.store.get_pause(row.delegated_pause_id or "")  # type: ignore[union-attr]
        assert child_row is not None and child_row.state is PauseState.ABANDONED
        desk.check_strict(await _history(parent, paused.session_id))


async def test_the_childs_rounds_count_toward_the_parents(store_url: str) -> None:
    desk = Desk()
    child = SymfonicAgent(
        name="billing",
        model=desk.model(
            "billing",
            calls(("note", {"text": "1"}, "c1")),
            calls(("note", {"text": "2"}, "c2")),
            final="billing: ",
        ),
        tools=[desk.note],
        store=store_url,
    )
    parent = front(
        desk,
        store_url,
        child,
        calls(("billing", {"task": "two notes"}, "d1")),
        calls(("billing", {"task": "two more"}, "d2")),
        limits=Limits(max_tool_rounds=4),
    )
    async with parent:
        # The parent's first round and the child's two are three of four: the
        # parent's second round is the fourth, and leaves its child none.
        result = await parent.run("notes", principal="alice")
        assert result.status == "complete", result.error
        assert _results(result)["d1"] == ("ok", "billing: noted 2")
        status, content = _results(result)["d2"]
        assert status == "error" and "no tool rounds are left" in content
        assert desk.notes == ["1", "2"]


async def test_the_childs_pause_writes_no_change_to_the_feed(store_url: str) -> None:
    desk = Desk()
    parent = front(desk, store_url, billing(desk, store_url))
    async with parent:
        start = await parent.store.pause_change_position()
        paused = await parent.run("charge", principal="alice")
        assert paused.pause is not None
        await parent.resume(paused.pause.token, APPROVE, principal="alice")
        changes = await parent.store.pause_changes_since(start, limit=100)
        assert changes is not None
        # Only the parent's pause is seen: created, claimed, published.
        assert {c.pause.pause_id for c in changes} == {paused.pause.pause_id}
        assert [c.state for c in changes] == [
            PauseState.PENDING, PauseState.CLAIMED, PauseState.PUBLISHED,
        ]


def test_cycles_depth_and_duplicate_names_are_refused_when_agents_are_built() -> None:
    model = ScriptedChatModel.from_script(["ok"])
    leaf = SymfonicAgent(name="a", model=model)
    middle = SymfonicAgent(name="b", model=model, delegates=[leaf])
    with pytest.raises(ConfigurationError, match=r"cycle.*'a' would reach itself: a → b → a"):
        SymfonicAgent(name="a", model=model, delegates=[middle])
    deep = SymfonicAgent(name="c", model=model, delegates=[middle])
    with pytest.raises(ConfigurationError, match=r"3 levels deep.*max_delegation_depth of 2"):
        SymfonicAgent(name="d", model=model, delegates=[deep], max_delegation_depth=2)
    assert SymfonicAgent(name="d", model=model, delegates=[deep]).delegates[0].name == "c"
    with pytest.raises(ConfigurationError, match="two delegate tools are named 'a'"):
        SymfonicAgent(name="e", model=model, delegates=[leaf, leaf])

    def a(task: str) -> str:
        """A tool that has the delegate's name."""
        return task

    with pytest.raises(ConfigurationError, match="the name of one of the agent's own tools"):
        SymfonicAgent(name="e", model=model, tools=[a], delegates=[leaf])
    assert SymfonicAgent(
        name="e", model=model, delegates=[leaf, leaf.as_tool(name="a2", description="again")]
    ).toolbox.delegates.keys() == {"a", "a2"}
