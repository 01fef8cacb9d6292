"""Asking a person for a pause's answer at the terminal, shaped by its kind and schema.

Each function takes ``ask`` (an ``input``-like callable) so the prompts can be
driven by a test or another front end; what they return is the JSON answer, or
``None`` for a person who declines (sent as ``status: cancelled``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Ask = Callable[[str], str]


def _approval(pause: dict[str, Any], ask: Ask) -> Any:
    while True:
        choice = ask("  [a]pprove, [e]dit arguments, [r]eject, [s]kip? ").strip().lower()
        if choice in {"a", "approve"}:
            return {"decision": "approve"}
        if choice in {"r", "reject"}:
            return {"decision": "reject", "reason": ask("  reason: ").strip()}
        if choice in {"s", "skip"}:
            return None
        if choice in {"e", "edit"}:
            raw = ask("  new arguments as JSON: ")
            try:
                args = json.loads(raw)
            except ValueError:
                print("  that is not JSON; try again")
                continue
            if isinstance(args, dict):
                return {"decision": "edit", "args": args}
            print("  the arguments must be a JSON object")


def _form(pause: dict[str, Any], ask: Ask) -> Any:
    schema = pause.get("response_schema") or {}
    print(f"  answer as JSON matching: {json.dumps(schema)}")
    while True:
        raw = ask("  answer (empty to skip): ").strip()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            print("  that is not JSON; try again")


def answer_for(pause: dict[str, Any], ask: Ask = input) -> Any:
    """The person's answer to ``pause``, or ``None`` if they decline."""
    print(f"\n  ? {pause.get('query', '')}  ({pause.get('kind')})")
    kind = pause.get("kind")
    if kind == "approval":
        return _approval(pause, ask)
    if kind == "form":
        return _form(pause, ask)
    text = ask("  your answer (empty to skip): ").strip()
    return text or None
