"""What a person's answer becomes: the observation the paused call receives.

Approve and edit dispatch the gated tool, reject never runs it, and every answer is
bounded in size and depth before its schema is checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from symfonic.capabilities.human.schema_problems import Problem, problems
from symfonic.core.contracts.errors import InvalidAnswer
from symfonic.core.contracts.types import Answer, AnswerStatus, InteractionKind, ToolStatus

DECLINED = "The person declined to answer."

# The whole of an approval's ``approve`` branch (interactions.approval_schema),
# whatever the gated tool's parameters; every other branch needs another
# decision. Only approval_pending makes approvals, always with that schema, so
# this answer is valid for every approval without walking its ``oneOf``; why
# that is worth a line: docs/internals.md.
PLAIN_APPROVAL = {"decision": "approve"}
MAX_ANSWER_BYTES = 64 << 10
MAX_ANSWER_DEPTH = 32


def validate_answer(
    schema: dict[str, Any], answer: Answer, status: AnswerStatus, kind: InteractionKind
) -> None:
    """Refuse an answer that fails the pause's schema, before anything is claimed.

    The message says what was wrong in words (``amount must be a number``); for
    an approval's edited arguments the path starts at the argument, since that
    is what the person changed.
    """
    if status != "resolved":  # declining needs no answer, whatever the schema
        return
    if kind is InteractionKind.APPROVAL and answer == PLAIN_APPROVAL:
        return
    _within_bounds(answer)
    found = problems(schema, answer)
    if found:
        said = [_words(p, kind) for p in found[:10]]
        raise InvalidAnswer("; ".join(said[:3]), errors=said)


def _within_bounds(answer: Answer) -> None:
    if _depth(answer) > MAX_ANSWER_DEPTH:
        raise InvalidAnswer(f"the answer is nested deeper than {MAX_ANSWER_DEPTH} levels")
    size = len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False, default=str).encode())
    if size > MAX_ANSWER_BYTES:
        raise InvalidAnswer(
            f"the answer is {size} bytes as JSON; at most {MAX_ANSWER_BYTES} are accepted"
        )


def _depth(value: Any) -> int:
    """How deeply ``value`` nests, walked without recursion (a deep value cannot overflow it)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict | list):
            if level > MAX_ANSWER_DEPTH:  # enough to refuse; no need to walk the rest
                return level
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, level + 1) for child in children)
    return deepest


def _words(problem: Problem, kind: InteractionKind) -> str:
    edited_argument = (
        kind is InteractionKind.APPROVAL and len(problem.path) > 1 and problem.path[0] == "args"
    )
    return problem.words(skip=1 if edited_argument else 0)


@dataclass(frozen=True)
class Resolution:
    """How the paused call is settled: its observation, or the arguments to run it with."""

    status: ToolStatus
    observation: str | None = None
    run_args: dict[str, Any] | None = None
    edited: bool = False


def resolve(
    kind: InteractionKind, answer: Answer, status: AnswerStatus, original_args: dict[str, Any]
) -> Resolution:
    if status != "resolved":
        return Resolution("ok", DECLINED)
    if kind is not InteractionKind.APPROVAL:
        text = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
        return Resolution("ok", text)
    decision = answer["decision"]
    if decision == "approve":
        return Resolution("ok", run_args=dict(original_args))
    if decision == "edit":
        return Resolution("ok", run_args=dict(answer["args"]), edited=True)
    reason = answer.get("reason")
    because = f": {reason}" if reason else "."
    return Resolution("rejected", f"The person rejected this call{because}")
