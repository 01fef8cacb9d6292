"""An approval rule on its own: how it is called, what it may answer, how it fails.

A rule takes the call's arguments, and the principal if it has a second
parameter; it may be async; it answers ``True`` or ``False`` and nothing else,
and an audience rule a scope name or ``None``. Anything else, or an exception,
is a failure told in words. Mistakes in the rule's shape are refused when the
agent is configured, not when a model first calls the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from symfonic import ConfigurationError, Principal, SymfonicAgent, needs_approval
from symfonic.capabilities.human.approval_rules import Approver, RuleFailed
from symfonic.capabilities.human.toolbox import ToolBox
from symfonic.core.contracts.types import InteractionKind, PendingInteraction
from symfonic.kernel.toolbox import UndecidedCall
from symfonic.testing import ScriptedChatModel, reply

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", frozenset({"staff"}))


def pay(to: str, amount: int) -> str:
    """Pay someone."""
    return f"paid {amount} to {to}"


async def test_a_one_parameter_rule_gets_the_arguments_and_a_two_parameter_one_the_principal_too(
) -> None:
    given: list[tuple[Any, ...]] = []

    def arguments_only(args: Mapping[str, Any]) -> bool:
        given.append((dict(args),))
        return True

    def with_principal(args: Mapping[str, Any], who: Principal) -> bool:
        given.append((dict(args), who))
        return True

    def variadic(*parts: Any) -> bool:
        given.append(parts)
        return True

    for rule in (arguments_only, with_principal, variadic):
        decided = await needs_approval(rule).decide("pay", {"amount": 1}, ALICE)
        assert decided == Approver(None, "Approve pay?")
    assert given == [({"amount": 1},), ({"amount": 1}, ALICE), ({"amount": 1}, ALICE)]


async def test_rules_may_be_async_and_the_audience_may_be_chosen_per_call() -> None:
    async def large(args: Mapping[str, Any]) -> bool:
        return bool(args["amount"] > 100)

    async def who(args: Mapping[str, Any], principal: Principal) -> str | None:
        return None if "staff" in principal.scopes and args["amount"] < 1000 else "cfo"

    rule = needs_approval(large, audience=who)
    assert await rule.decide("pay", {"amount": 50}, ALICE) is None
    assert await rule.decide("pay", {"amount": 500}, ALICE) == Approver(None, "Approve pay?")
    assert await rule.decide("pay", {"amount": 5000}, ALICE) == Approver("cfo", "Approve pay?")
    bob = Principal("bob")
    assert await rule.decide("pay", {"amount": 500}, bob) == Approver("cfo", "Approve pay?")


async def test_without_a_condition_every_call_needs_approval() -> None:
    assert await needs_approval(audience="finance").decide("pay", {}, ALICE) == Approver(
        "finance", "Approve pay?"
    )


async def test_what_a_rule_does_to_its_arguments_never_reaches_the_call() -> None:
    def meddling(args: Any) -> bool:
        args["amount"] = 0
        args["nested"].append("x")
        return True

    toolbox = ToolBox([pay], approval={"pay": needs_approval(meddling)})
    call = {"name": "pay", "id": "c", "args": {"to": "bob", "amount": 5, "nested": []}}
    pending = await toolbox.interaction_for(call, ALICE)
    assert isinstance(pending, PendingInteraction) and pending.kind is InteractionKind.APPROVAL
    assert pending.args == {"to": "bob", "amount": 5, "nested": []}
    assert call["args"] == {"to": "bob", "amount": 5, "nested": []}


@pytest.mark.parametrize(
    ("rule", "audience", "words"),
    [
        (lambda args: 1 / 0, None, "failed on this call (ZeroDivisionError: division by zero)"),
        (lambda args: args["amount"], None, "(KeyError: there is no 'amount')"),
        (lambda args: None, None, "gave None, where True (a person must approve) or False"),
        (lambda args: 1, None, "gave 1, where True"),
        (None, lambda args: 7, "chose the audience 7, where a scope name"),
        (None, lambda args: "", "chose the audience '', where a scope name"),
        (None, lambda args: {}["who"], "(KeyError: there is no 'who')"),
    ],
    ids=["raises", "key-error", "forgot-return", "not-a-bool", "audience-type",
         "audience-empty", "audience-raises"],
)
async def test_a_failed_rule_is_told_in_words_and_leaves_the_call_undecided(
    rule: Any, audience: Any, words: str
) -> None:
    gate = needs_approval(rule, audience=audience)
    with pytest.raises(RuleFailed) as failed:
        await gate.decide("pay", {}, ALICE)
    assert words in failed.value.words
    toolbox = ToolBox([pay], approval={"pay": gate})
    undecided = await toolbox.interaction_for({"name": "pay", "id": "c", "args": {}}, ALICE)
    assert isinstance(undecided, UndecidedCall) and undecided.tool_call_id == "c"
    assert undecided.reason.startswith("error: the approval rule for pay")
    assert undecided.reason.endswith("so nothing in this round ran")


@pytest.mark.parametrize(
    "approval",
    [
        lambda: {"pay": needs_approval(lambda: True)},  # type: ignore[arg-type,misc]
        lambda: {"pay": needs_approval(lambda a, b, c: True)},  # type: ignore[arg-type,misc]
        lambda: {"pay": needs_approval("amount > 100")},  # type: ignore[arg-type]
        lambda: {"pay": needs_approval(audience="")},
        lambda: {"refund": needs_approval(lambda args: True)},
    ],
    ids=["no-parameter", "three-parameters", "not-callable", "empty-audience", "unknown-tool"],
)
def test_a_rule_of_the_wrong_shape_is_refused_at_configuration(approval: Any) -> None:
    with pytest.raises(ConfigurationError):
        SymfonicAgent(
            model=ScriptedChatModel.from_script([reply("hi")]), tools=[pay], approval=approval()
        )


def test_rules_scopes_and_plain_names_mix_in_one_mapping() -> None:
    def note(text: str) -> str:
        """Write a note."""
        return text

    toolbox = ToolBox(
        [pay, note], approval={"pay": needs_approval(lambda args: True), "note": "finance"}
    )
    assert set(toolbox.gates) == {"pay", "note"}
    assert "needs_approval(<function" in repr(toolbox.gates["pay"])
