"""The tools of one agent, and which call of a round, if any, is the first that must wait for a
person.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.tools import BaseTool

from symfonic.capabilities.human.approval_rules import ApprovalRule, RuleFailed
from symfonic.capabilities.human.interactions import Interaction, approval_pending, ask_human
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import Escalation, PendingInteraction
from symfonic.kernel.toolbox import UndecidedCall
from symfonic.kernel.tools import Tool, ToolLike

Approval = Iterable[str] | Mapping[str, str | ApprovalRule | None]
"""The gated tools: a set of names (the owner approves every call), or each name
mapped to the scope that approves it, or to a rule (`needs_approval`)."""


class ToolBox:
    def __init__(
        self,
        tools: Iterable[ToolLike] = (),
        *,
        interactions: Iterable[Interaction] = (),
        approval: Approval = (),
        ask_human_audience: str | None = None,
        ask_human_escalate: Iterable[Escalation] | None = None,
        delegates: Iterable[BaseTool] = (),
    ) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            wrapped = Tool(tool)
            if wrapped.name in self.tools:
                raise ConfigurationError(f"two tools are named {wrapped.name!r}")
            self.tools[wrapped.name] = wrapped
        self.interactions: dict[str, Interaction] = {}
        for item in (ask_human(ask_human_audience, ask_human_escalate), *interactions):
            if item.name in self.tools:
                raise ConfigurationError(f"{item.name!r} is both a tool and an interaction")
            self.interactions[item.name] = item
        # Other agents called as tools: bound like tools, run by the kernel's delegates.
        self.delegates: dict[str, BaseTool] = {}
        for binding in delegates:
            if binding.name in self.tools or binding.name in self.interactions:
                raise ConfigurationError(
                    f"the delegate tool {binding.name!r} has the name of one of the agent's "
                    "own tools; give it another name with as_tool(name=...)"
                )
            if binding.name in self.delegates:
                raise ConfigurationError(
                    f"two delegate tools are named {binding.name!r}; give one another name "
                    "with as_tool(name=...)"
                )
            self.delegates[binding.name] = binding
        gates = approval if isinstance(approval, Mapping) else {name: None for name in approval}
        unknown = sorted(set(gates) - set(self.tools))
        if unknown:
            raise ConfigurationError(f"approval names tools the agent does not have: {unknown}")
        self.gates: dict[str, ApprovalRule] = {
            name: rule if isinstance(rule, ApprovalRule) else ApprovalRule(audience=rule)
            for name, rule in gates.items()
        }

    def bindings(self) -> list[BaseTool]:
        return (
            [t.binding for t in self.tools.values()]
            + [i.binding() for i in self.interactions.values()]
            + list(self.delegates.values())
        )

    async def question_for(
        self, tool: str, args: Mapping[str, Any], principal: Principal
    ) -> str | None:
        """The question an approval of this call of ``tool`` asks, worded from ``args`` by
        its rule's description (or the default one); ``None`` when no rule gates ``tool``."""
        gate = self.gates.get(tool)
        return None if gate is None else await gate.question(tool, args, principal)

    async def interaction_for(
        self, call: Mapping[str, Any], principal: Principal
    ) -> PendingInteraction | UndecidedCall | None:
        """The interaction this call is, an undecided call, or ``None`` for an ordinary call."""
        name, call_id, args = call["name"], call["id"], dict(call.get("args") or {})
        if name in self.interactions:
            return self.interactions[name].pending(call_id, args)
        gate = self.gates.get(name)
        if gate is None:
            return None
        try:
            approver = await gate.decide(name, args, principal)
        except RuleFailed as failed:
            return UndecidedCall(call_id, f"error: {failed.words}, so nothing in this round ran")
        if approver is None:
            return None
        return approval_pending(
            name,
            call_id,
            args,
            self.tools[name].parameters,
            approver.audience,
            approver.query,
            approver.escalate,
            approvals_required=approver.approvers,
            allow_requester=approver.allow_requester,
        )
