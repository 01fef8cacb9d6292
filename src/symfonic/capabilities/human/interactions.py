"""The three kinds of interaction (input, form, approval) and the JSON Schema of the answer each
accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from symfonic.capabilities.human.escalation import escalation_chain
from symfonic.core.args_digest import args_digest
from symfonic.core.contracts.types import Escalation, InteractionKind, PendingInteraction

ASK_HUMAN = "ask_human"


class _Question(BaseModel):
    question: str = Field(description="What to ask the person, in plain words.")


@dataclass(frozen=True)
class Interaction:
    """A tool the model may call to ask a person; declared with `interaction`."""

    name: str
    description: str
    response_schema: dict[str, Any]
    kind: InteractionKind = InteractionKind.FORM
    audience: str | None = None
    escalate: tuple[Escalation, ...] = ()

    def binding(self) -> BaseTool:
        """The model-facing tool: it takes a question and is never dispatched."""

        def never_dispatched(question: str) -> str:
            raise RuntimeError(f"{self.name} is an interaction and is answered by a person")

        return StructuredTool.from_function(
            func=never_dispatched,
            name=self.name,
            description=self.description,
            args_schema=_Question,
        )

    def pending(self, tool_call_id: str, args: dict[str, Any]) -> PendingInteraction:
        question = args.get("question")
        query = question if isinstance(question, str) and question else self.description
        return PendingInteraction(
            kind=self.kind,
            tool_call_id=tool_call_id,
            tool_name=self.name,
            args=args,
            query=query,
            response_schema=self.response_schema,
            audience=self.audience,
            escalate=self.escalate,
        )


def interaction(
    name: str,
    description: str,
    schema: type[BaseModel] | dict[str, Any],
    *,
    audience: str | None = None,
    escalate: Iterable[Escalation] | None = None,
) -> Interaction:
    """Declare a form the model can ask a person to fill in.

    Args:
        name: the tool name the model calls.
        description: what the form asks, as the model and the person read it.
        schema: a pydantic model or a JSON Schema; an answer is checked against it
            before the pause is claimed.
        audience: the scope a principal needs to answer. ``None``: the session's owner.
        escalate: `escalation` steps that re-address the pause while nobody answers.
    """
    response_schema = schema.model_json_schema() if isinstance(schema, type) else dict(schema)
    chain = escalation_chain(escalate)
    return Interaction(name, description, response_schema, InteractionKind.FORM, audience, chain)


def ask_human(
    audience: str | None = None, escalate: Iterable[Escalation] | None = None
) -> Interaction:
    """The built-in free-text question; every agent has one."""
    return Interaction(
        ASK_HUMAN,
        "Ask the person a question and wait for their answer. Use it when you need "
        "information or a decision only they can give.",
        {"type": "string"},
        InteractionKind.INPUT,
        audience,
        escalation_chain(escalate),
    )


def approval_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """The answer to an approval gate: approve, edit the arguments, or reject."""
    return {
        "oneOf": [
            {
                "type": "object",
                "properties": {"decision": {"const": "approve"}},
                "required": ["decision"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "decision": {"const": "edit"},
                    "args": parameters or {"type": "object"},
                },
                "required": ["decision", "args"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"decision": {"const": "reject"}, "reason": {"type": "string"}},
                "required": ["decision"],
                "additionalProperties": False,
            },
        ]
    }


def approval_pending(
    tool_name: str,
    tool_call_id: str,
    args: dict[str, Any],
    parameters: dict[str, Any],
    audience: str | None,
    query: str,
    escalate: tuple[Escalation, ...] = (),
    *,
    approvals_required: int = 1,
    allow_requester: bool = True,
) -> PendingInteraction:
    """The pause of a gated call: ``query`` is its question, already worded by its rule."""
    return PendingInteraction(
        kind=InteractionKind.APPROVAL,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        args=args,
        query=query,
        response_schema=approval_schema(parameters),
        audience=audience,
        args_digest=args_digest(tool_name, args),
        escalate=escalate,
        approvals_required=approvals_required,
        allow_requester=allow_requester,
    )
