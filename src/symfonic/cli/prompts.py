"""Asking a person for a pause's answer at the terminal, shaped by its kind and schema.

Each prompt reads through ``ask`` (an ``input``-like callable). An edit starts from the
call's arguments, Enter keeping each, and checks every field against the schema as it is typed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from symfonic.capabilities.human.schema_problems import problems
from symfonic.cli.render import shown
from symfonic.cli.terminal import Terminal

Ask = Callable[[str], str]


@dataclass(frozen=True)
class Reply:
    action: Literal["resolved", "cancelled", "declined", "abandon"]
    answer: Any = None


DECLINE = Reply("cancelled")
ABANDON = Reply("abandon")
# What `?` at an approval's prompt says each choice does.
CHOICES = (
    "approve: run the call as shown",
    "edit: change its arguments, then run it",
    "reject: do not run it; the agent is told, with your reason",
    "decline: give no answer; the agent is told none was given",
)
ABANDON_CHOICE = "abandon: leave it waiting; your next message abandons it"


def declined(pause: dict[str, Any]) -> Reply:
    """The person's refusal of ``pause``: ``declined`` for an MCP server's question."""
    return Reply("declined") if pause.get("server") else DECLINE


def edit_schema(response_schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of an approval's edited arguments (the ``edit`` branch's ``args``)."""
    for branch in response_schema.get("oneOf", ()):
        properties = branch.get("properties", {}) if isinstance(branch, dict) else {}
        if properties.get("decision", {}).get("const") == "edit":
            args = properties.get("args", {})
            return args if isinstance(args, dict) else {}
    return {}


def _parse(raw: str, schema: dict[str, Any]) -> Any:
    """What the person typed for one field: text for a text field, else JSON if it parses."""
    types = schema.get("type")
    text_field = types == "string" or (isinstance(types, list) and "string" in types)
    if text_field and not raw.startswith('"'):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # the service says, in words, what this field must be


def field_problems(response_schema: dict[str, Any], args: dict[str, Any], name: str) -> list[str]:
    """What is wrong with ``args[name]`` in an edit, in words (the whole edit checked against
    the whole schema, where its references resolve); empty when it fits."""
    answer = {"decision": "edit", "args": args}
    return [
        problem.words(skip=1)
        for problem in problems(response_schema, answer)
        if problem.path[:2] == ("args", name)
    ]


def _edited_field(
    response_schema: dict[str, Any], args: dict[str, Any], name: str, ask: Ask, term: Terminal
) -> dict[str, Any]:
    """``args`` with ``name`` as the person types it, asked until it fits the schema."""
    field = edit_schema(response_schema).get("properties", {}).get(name, {})
    while True:
        now = f" [{shown(args[name])}]" if name in args else ""
        raw = ask(f"    {name}{now}: ").strip()
        edited = {**args, name: _parse(raw, field)} if raw else args
        said = field_problems(response_schema, edited, name)
        if not said:
            return edited
        term.line(f"{'; '.join(said)}. Type it again.", "yellow", label="not accepted: ", indent=4)


def edited_args(
    response_schema: dict[str, Any], current: dict[str, Any], ask: Ask, term: Terminal
) -> dict[str, Any]:
    """The arguments after the person has changed the ones they mean to; Enter keeps one."""
    properties: dict[str, Any] = edit_schema(response_schema).get("properties", {})
    names = [*current, *(name for name in properties if name not in current)]
    term.line("Enter keeps a value; type a new one to change it.", "dim", indent=2)
    args = dict(current)
    for name in names:
        args = _edited_field(response_schema, args, name, ask, term)
    return args


def _approval(
    pause: dict[str, Any], ask: Ask, term: Terminal, current: dict[str, Any], may_abandon: bool
) -> Reply:
    options = "[a]pprove, [e]dit, [r]eject, [d]ecline" + (", or [x] abandon" if may_abandon else "")
    while True:
        choice = ask(f"  {options}? ").strip().lower()
        if choice in {"a", "approve"}:
            return Reply("resolved", {"decision": "approve"})
        if choice in {"r", "reject"}:
            return Reply("resolved", {"decision": "reject", "reason": ask("  reason: ").strip()})
        if choice in {"d", "decline", "s", "skip"}:
            return declined(pause)
        if choice in {"x", "abandon"} and may_abandon:
            return ABANDON
        if choice in {"e", "edit"}:
            args = edited_args(pause.get("response_schema") or {}, current, ask, term)
            return Reply("resolved", {"decision": "edit", "args": args})
        for said in (*CHOICES, ABANDON_CHOICE) if may_abandon else CHOICES:
            term.line(said, "dim", indent=4)


def _form(pause: dict[str, Any], ask: Ask, term: Terminal) -> Reply:
    schema = pause.get("response_schema") or {}
    term.line(
        json.dumps(schema, ensure_ascii=False), "dim", label="answer as JSON matching ", indent=2
    )
    while True:
        raw = ask("  answer (empty to decline): ").strip()
        if not raw:
            return declined(pause)
        try:
            return Reply("resolved", json.loads(raw))
        except ValueError:
            term.line("that is not JSON; try again", "yellow", indent=2)


def show_arguments(term: Terminal, args: dict[str, Any]) -> None:
    """A call's arguments as a table under its question: one named row each, never JSON."""
    width = max((len(name) for name in args), default=0)
    for name, value in args.items():
        term.line(shown(value), label=f"{name.ljust(width)}  ", label_style="dim", indent=4)


def answer_for(
    pause: dict[str, Any],
    ask: Ask,
    term: Terminal,
    *,
    current: dict[str, Any] | None = None,
    may_abandon: bool = False,
) -> Reply:
    """The person's reply to ``pause``; ``current`` is the call's arguments, if known."""
    term.line(str(pause.get("query", "")), "bold", label="? ", label_style="bold magenta", indent=2)
    if pause.get("server"):
        term.line(f"asked by MCP server {pause['server']}", "dim", indent=4)
    kind = pause.get("kind")
    if kind == "approval":
        show_arguments(term, current or {})
        return _approval(pause, ask, term, current or {}, may_abandon)
    if kind == "form":
        return _form(pause, ask, term)
    text = ask("  your answer (empty to decline): ").strip()
    return Reply("resolved", text) if text else declined(pause)
