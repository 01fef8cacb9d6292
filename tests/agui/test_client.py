"""A real AG-UI client that nobody here wrote drives a pause → resume cycle.

``@ag-ui/client`` (npm, pinned in ``tests/agui/agui_client/package-lock.json``) runs
``tests/agui/agui_client/run_cycle.mjs`` against the demo agent served by a real
uvicorn process on a loopback port: its ``HttpAgent`` runs until the approval
interrupt, a second client on the thread is refused while it is pending, the
first resumes with ``buildResumeArray``, and replays that resume. Every event the
client received is validated again here with ``ag_ui.core``'s models.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import (
    BaseEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agui_support import check_lifecycle, finished, parse_event, types
from symfonic.core.contracts.types import PauseState
from symfonic.storage import open_store

HARNESS = Path(__file__).parent / "agui_client"
KEY = "agui-client-key"


def _npm_ready() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed; the AG-UI client test needs Node 20+")
    if not (HARNESS / "node_modules" / "@ag-ui" / "client").is_dir():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=HARNESS, check=True, timeout=600,
            capture_output=True,
        )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The demo agent under uvicorn, listening on a loopback socket bound before it starts."""
    store = f"sqlite:///{tmp_path / 'agui.db'}"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    log = (tmp_path / "uvicorn.log").open("w")
    env = {**os.environ, "SYMFONIC_STORE": store, "SYMFONIC_API_KEYS": f"alice={KEY}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "agui_server:app",
         "--app-dir", str(Path(__file__).parent), "--fd", str(listener.fileno()),
         "--log-level", "warning"],
        pass_fds=[listener.fileno()], env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}", store
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        print((tmp_path / "uvicorn.log").read_text())


def _events(raw: list[dict[str, Any]]) -> list[BaseEvent]:
    events = [parse_event(json.dumps(event)) for event in raw]
    check_lifecycle(events)
    return events


async def _pause_rows(store_url: str, thread: str) -> list[Any]:
    async with open_store(store_url) as store:
        return await store.session_pauses(thread)


@pytest.mark.slow
def test_the_official_client_pauses_resumes_and_replays(server: tuple[str, str]) -> None:
    _npm_ready()
    base, store_url = server
    done = subprocess.run(
        ["node", "run_cycle.mjs"], cwd=HARNESS, capture_output=True, text=True, timeout=120,
        env={**os.environ, "AGUI_BASE_URL": base, "AGUI_API_KEY": KEY},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)

    hitl = seen["capabilities"]["humanInTheLoop"]
    assert hitl["interrupts"] is True and hitl["approveWithEdits"] is True

    first = _events(seen["first"]["events"])
    assert seen["first"]["error"] is None
    calls = [e for e in first if isinstance(e, ToolCallStartEvent)]
    assert [c.tool_call_name for c in calls] == ["lookup_contact", "send_payment"]
    outcome = finished(first).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    [interrupt] = seen["interrupts"]
    assert interrupt == outcome.interrupts[0].model_dump(mode="json", by_alias=True)
    assert (interrupt["reason"], interrupt["toolCallId"]) == ("tool_call", calls[1].tool_call_id)

    # A client that knows nothing of the interrupt gets the thread back, not an error:
    # its messages and the open interrupt, which its own message did not go past.
    refused = _events(seen["refused"]["events"])
    assert seen["refused"]["error"] is None
    assert types(refused) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert seen["strangerInterrupts"] == [interrupt]
    said = [m["content"] for m in seen["strangerMessages"] if m["role"] == "user"]
    assert said == ["Pay alice 42 EUR for the design work"]

    second = _events(seen["second"]["events"])
    assert seen["second"]["error"] is None and seen["pendingAfter"] == 0
    assert not [e for e in second if isinstance(e, ToolCallStartEvent)]
    [paid] = [e for e in second if isinstance(e, ToolCallResultEvent)]
    assert paid.tool_call_id == interrupt["toolCallId"]
    assert "sent: 42 EUR to DE89" in str(paid.content)
    assert isinstance(finished(second).outcome, RunFinishedSuccessOutcome)
    answer = seen["second"]["result"]["answer"]
    assert answer.startswith("Done. payment pay_")

    replay = _events(seen["replay"]["events"])
    assert seen["replay"]["result"] == seen["second"]["result"]
    assert types(replay) == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT", "RUN_FINISHED",
    ]

    # The client's own transcript: the call answered on its id, then the answer.
    messages = seen["messages"]
    tool = [m for m in messages if m["role"] == "tool" and m["toolCallId"] == paid.tool_call_id]
    assert len(tool) == 1
    assert messages[-1]["role"] == "assistant" and answer in messages[-1]["content"]

    [row] = asyncio.run(_pause_rows(store_url, seen["threadId"]))
    assert (row.state, row.answer, row.answered_by) == (
        PauseState.PUBLISHED, {"decision": "approve"}, "alice",
    )
