"""Showing a turn's stream at the terminal as it arrives; values as JSON, numbers as the
inbox writes them. A `TurnView` remembers each call's arguments, so an edit starts from them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from symfonic.cli.client import EventFrame
from symfonic.cli.terminal import Terminal

RESULT_LIMIT = 400
_STATUS_STYLE = {"ok": "green", "declined": "yellow", "rejected": "yellow"}


def approvals_words(pause: dict[str, Any]) -> str | None:
    """Where a pause that needs several approvals stands, as the inbox says it:
    ``1 of 2 approvals, by carol``; ``None`` for a pause one answer settles."""
    needed = int(pause.get("approvals_required") or 1)
    if needed <= 1:
        return None
    given = [str(vote["principal"]) for vote in pause.get("approvals") or ()]
    words = f"{len(given)} of {needed} approvals"
    return f"{words}, by {', '.join(given)}" if given else words


def shown(value: Any) -> str:
    """A value as a person reads it: text as itself, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(_as_js(value), ensure_ascii=False)


def _as_js(value: Any) -> Any:
    """``value`` with each whole float as an int: ``15``, as the inbox's JavaScript shows 15.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _as_js(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_js(item) for item in value]
    return value


def reconnecting(terminal: Terminal) -> Callable[[Exception], None]:
    """What the person is told when the connection to a run's events drops and is
    reopened: one line, then the indicator while it reconnects. The output goes on
    where it stopped, each event once (`Client.turn`)."""

    def say(_: Exception) -> None:
        terminal.line("connection lost, reconnecting…", "yellow")
        terminal.working("reconnecting")

    return say


class TurnView:
    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal
        self.calls: dict[str, dict[str, Any]] = {}
        self._declined: set[str] = set()

    def decline(self, tool_call_id: str) -> None:
        self._declined.add(tool_call_id)

    async def show(self, frames: AsyncIterator[EventFrame]) -> EventFrame | None:
        """Print the stream; the frame it ended on (``None`` if it sent none)."""
        term = self.terminal
        last: EventFrame | None = None
        term.working()
        try:
            async for frame in frames:
                last = frame
                self._frame(frame)
        finally:
            term.quiet()
            term.end_text()
        return last

    def _frame(self, frame: EventFrame) -> None:
        term, data = self.terminal, frame.data
        if frame.type == "text.delta":
            term.text(str(data.get("text", "")), label="assistant: ", label_style="bold cyan")
        elif frame.type == "tool.call":
            args = data.get("args") or {}
            self.calls[str(data.get("tool_call_id"))] = dict(args)
            term.line(
                f"{data['name']} {shown(args)}",
                "dim",
                label="→ ",
                label_style="cyan",
                indent=2,
            )
            term.working(f"running {data['name']}")
        elif frame.type == "tool.result":
            self._result(data)
            term.working()
        elif frame.type == "approval.recorded":
            term.line(f"{approvals_words(data)}; the pause waits for the rest", label="counted: ")
        elif frame.type == "error":
            term.line(
                f"{data.get('message')} ({data.get('code')})",
                "red",
                label="error: ",
                label_style="bold red",
            )

    def _result(self, data: dict[str, Any]) -> None:
        status = str(data.get("status"))
        content = shown(data.get("content", ""))
        if data.get("tool_call_id") in self._declined and status == "ok":
            status, content = "declined", "no answer was given"
        if len(content) > RESULT_LIMIT:
            content = content[:RESULT_LIMIT] + "…"
        self.terminal.line(
            f"{content}",
            "dim",
            label=f"← {data['name']} [{status}] ",
            label_style=_STATUS_STYLE.get(status, "red"),
            indent=2,
        )
