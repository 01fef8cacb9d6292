"""Why an answer fails its schema, said in words: the messages a person reads on a 422."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic import InvalidAnswer
from symfonic.capabilities.human.answers import PLAIN_APPROVAL, validate_answer
from symfonic.capabilities.human.interactions import approval_schema
from symfonic.capabilities.human.schema_problems import problems
from symfonic.core.contracts.types import InteractionKind

PAYMENT = approval_schema(
    {
        "type": "object",
        "properties": {
            "to_iban": {"type": "string"},
            "amount": {"type": "number"},
            "currency": {"type": "string", "enum": ["EUR", "USD"]},
        },
        "required": ["to_iban", "amount", "currency"],
    }
)
IBAN = "DE89 3704 0044 0532 0130 00"


def _edit(**args: Any) -> dict[str, Any]:
    return {"decision": "edit", "args": {"to_iban": IBAN, "amount": 4, "currency": "EUR", **args}}


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (_edit(amount="x"), "amount must be a number"),
        (_edit(currency="GBP"), 'currency must be one of "EUR" or "USD"'),
        ({"decision": "edit", "args": {"amount": 4}}, "to_iban is required; currency is required"),
        ({"decision": "maybe"}, 'decision must be one of "approve", "edit" or "reject"'),
        ({"decision": "reject", "reason": 3}, "reason must be text"),
        ({"decision": "approve", "note": "ok"}, "note is not expected here"),
        ({"decision": "edit"}, "args is required"),
        ({}, "decision is required"),
        ("approve", "the answer must be an object"),
        (None, "the answer must be an object"),
    ],
)
def test_an_approval_refusal_names_the_field_and_what_it_must_be(answer: Any, said: str) -> None:
    with pytest.raises(InvalidAnswer) as refused:
        validate_answer(PAYMENT, answer, "resolved", InteractionKind.APPROVAL)
    assert refused.value.message == said
    assert "valid under" not in str(refused.value.fields["errors"])


@pytest.mark.parametrize(
    ("schema", "answer", "said"),
    [
        ({"type": "string"}, 3, "the answer must be text"),
        ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
         {"n": 0}, "n must be at least 1"),
        ({"type": "object", "properties": {"n": {"type": "integer"}}},
         {"n": 1.5}, "n must be a whole number"),
        ({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
         {"tags": ["a", 2]}, "tags.1 must be text"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, [],
         "the answer must be text or a whole number"),
    ],
)
def test_a_form_refusal_says_where_and_what(schema: dict[str, Any], answer: Any, said: str) -> None:
    assert "; ".join(p.words() for p in problems(schema, answer)) == said


def test_a_valid_answer_has_no_problems() -> None:
    assert problems(PAYMENT, _edit()) == []


@pytest.mark.parametrize(
    "parameters",
    [
        {},
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        PAYMENT["oneOf"][1]["properties"]["args"],
    ],
)
def test_every_approval_schema_admits_the_plain_approval_accepted_without_reading_it(
    parameters: dict[str, Any],
) -> None:
    # validate_answer accepts {"decision": "approve"} for any approval without
    # walking its schema; that is sound only while every approval schema admits it.
    schema = approval_schema(parameters)
    assert problems(schema, PLAIN_APPROVAL) == []
    validate_answer(schema, PLAIN_APPROVAL, "resolved", InteractionKind.APPROVAL)
