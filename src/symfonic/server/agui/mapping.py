"""symfonic stream events as AG-UI events, for one run, with the protocol's sequencing rules: a
text message closed before anything else, each tool call a start, args and end, and the run
closed exactly once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Message,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from symfonic.core.contracts.types import (
    ErrorEvent,
    Event,
    ResponseCompleteEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.server.agui.interrupts import interrupt_of


def _new_id() -> str:
    return uuid.uuid4().hex


class RunProjection:
    """Turns one symfonic stream into the AG-UI events of the run ``run_input`` asked for.

    ``answered_tool_call_id`` is the call a resumed run's answer settles.
    ``joined``: the run follows a turn another request started; its
    ``RUN_STARTED`` says so. Either way ``RUN_STARTED`` names symfonic's run
    (``metadata.symfonic.runId``), which ``/v1/runs/{id}`` reads and cancels.
    """

    def __init__(
        self,
        run_input: RunAgentInput,
        *,
        answered_tool_call_id: str | None = None,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self.run_input = run_input
        self.answered_tool_call_id = answered_tool_call_id
        self._new_id = new_id
        self.started = False
        self.closed = False
        self.joined = False
        self._text_id: str | None = None
        self._round_id: str | None = None
        self._round_text = False

    # run lifecycle -----------------------------------------------------------

    def start(self, metadata: dict[str, object] | None = None) -> list[BaseEvent]:
        self.started = True
        return [
            RunStartedEvent(
                thread_id=self.run_input.thread_id,
                run_id=self.run_input.run_id,
                parent_run_id=self.run_input.parent_run_id,
                protocol_version=PROTOCOL_VERSION,
                input=self.run_input,
                metadata=metadata,
            )
        ]

    def succeed(self, result: object = None) -> list[BaseEvent]:
        return self._close(
            RunFinishedEvent(
                thread_id=self.run_input.thread_id,
                run_id=self.run_input.run_id,
                result=result,
                outcome=RunFinishedSuccessOutcome(),
            )
        )

    def interrupt(
        self, paused: TurnPausedEvent, addressed: Mapping[str, Any] | None = None
    ) -> list[BaseEvent]:
        """``RUN_FINISHED`` with the interrupt ``paused`` stands for; ``addressed`` adds
        to its metadata who the pause was handed to."""
        interrupts = [interrupt_of(paused, addressed)]
        return self._close(
            RunFinishedEvent(
                thread_id=self.run_input.thread_id,
                run_id=self.run_input.run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
            )
        )

    def snapshot(self, messages: list[Message]) -> list[BaseEvent]:
        """``MESSAGES_SNAPSHOT``: the thread's messages replace the front end's."""
        if self.closed:
            return []
        return [*self._end_text(), MessagesSnapshotEvent(messages=messages)]

    def say(self, text: str) -> list[BaseEvent]:
        """One whole assistant text message."""
        if self.closed:
            return []
        return [*self._end_text(), *self._text(text), *self._end_text()]

    def fail(self, code: str, message: str) -> list[BaseEvent]:
        """``RUN_ERROR``; before ``RUN_STARTED`` it is the whole stream (a refused input)."""
        return self._close(RunErrorEvent(code=code, message=message))

    def _close(self, event: BaseEvent) -> list[BaseEvent]:
        if self.closed:
            return []
        self.closed = True
        return [*self._end_text(), event]

    # the stream --------------------------------------------------------------

    def project(self, event: Event) -> list[BaseEvent]:
        if self.closed:
            return []
        if isinstance(event, TurnStartedEvent):
            shown: dict[str, object] = {
                "baseRevision": event.base_revision,
                "resumed": event.resumed,
                "runId": event.run_id,
            }
            if self.joined:
                shown["joined"] = True
            return self.start({"symfonic": shown})
        if isinstance(event, TextDeltaEvent):
            return self._text(event.text)
        if isinstance(event, ToolCallEvent):
            return self._tool_call(event)
        if isinstance(event, ToolResultEvent):
            return self._tool_result(event)
        if isinstance(event, TurnPausedEvent):
            return self.interrupt(event)
        if isinstance(event, ResponseCompleteEvent):
            # A replayed outcome streams nothing before it: the answer still
            # reaches the front end as a message, not only as the run's result.
            said = [] if self._round_text else self._text(event.answer)
            return [*said, *self.succeed({"answer": event.answer, "revision": event.revision})]
        if isinstance(event, ErrorEvent):
            return self.fail(event.code, event.message)
        return []

    def _text(self, text: str) -> list[BaseEvent]:
        if not text:
            return []
        out: list[BaseEvent] = []
        if self._text_id is None:
            self._text_id = self._round_id or self._new_id()
            self._round_id = self._text_id
            out.append(TextMessageStartEvent(message_id=self._text_id, role="assistant"))
        self._round_text = True
        out.append(TextMessageContentEvent(message_id=self._text_id, delta=text))
        return out

    def _end_text(self) -> list[BaseEvent]:
        if self._text_id is None:
            return []
        ended = TextMessageEndEvent(message_id=self._text_id)
        self._text_id = None
        return [ended]

    def _tool_call(self, event: ToolCallEvent) -> list[BaseEvent]:
        if event.tool_call_id == self.answered_tool_call_id:
            return []
        out = self._end_text()
        if self._round_id is None:
            self._round_id = self._new_id()
        out += [
            ToolCallStartEvent(
                tool_call_id=event.tool_call_id,
                tool_call_name=event.name,
                parent_message_id=self._round_id,
            ),
            ToolCallArgsEvent(tool_call_id=event.tool_call_id, delta=json.dumps(event.args)),
            ToolCallEndEvent(tool_call_id=event.tool_call_id),
        ]
        return out

    def _tool_result(self, event: ToolResultEvent) -> list[BaseEvent]:
        out = self._end_text()
        # Results end a round: the model's next reply is a new assistant message.
        self._round_id, self._round_text = None, False
        out.append(
            ToolCallResultEvent(
                message_id=self._new_id(),
                tool_call_id=event.tool_call_id,
                content=event.content,
                role="tool",
            )
        )
        return out
