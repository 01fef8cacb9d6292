"""The TypeScript client's runs, against a real ``symfonic serve``: what a front end gets.

``clients/typescript/runs.ts`` is compiled with the ``tsc`` that
``package-lock.json`` pins and driven by ``clients/typescript/test/runs_check.ts``
in Node: a turn started in the background is followed to its pause, replayed
after ``Last-Event-ID``, resumed in the background and followed to its answer;
a follower whose connection drops after the first frame reconnects with
``Last-Event-ID`` and gets each event once; a running turn is cancelled, its
stream ends with ``run_cancelled``, and refusals arrive as the service's codes.
Without Node it is skipped (a failure with ``SYMFONIC_REQUIRE_NODE=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tools.openapi import TYPESCRIPT

from serve_support import KEYS, serving
from test_api_documents import needs_node

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent.parent
WORK = {"SYMFONIC_TEST_WORK_SECONDS": "3600"}


def compiled(build: Path) -> Path:
    """The client and its check, compiled to ES modules in ``build``; the check's path."""
    tsc = TYPESCRIPT / "node_modules" / ".bin" / "tsc"
    done = subprocess.run(
        [str(tsc), "-p", str(TYPESCRIPT), "--noEmit", "false", "--outDir", str(build)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (build / "package.json").write_text('{"type": "module"}')
    (build / "node_modules").symlink_to(TYPESCRIPT / "node_modules")
    return build / "test" / "runs_check.js"


def checked(script: Path, url: str) -> dict[str, Any]:
    ran = subprocess.run(
        ["node", str(script), url, "alice-secret-key"], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    seen: dict[str, Any] = json.loads(ran.stdout.strip().splitlines()[-1])
    return seen


def test_the_typescript_client_starts_follows_resumes_and_cancels_runs(tmp_path: Path) -> None:
    needs_node()
    script = compiled(tmp_path / "build")
    with serving(
        f"sqlite:///{tmp_path / 'runs.db'}", tmp_path / "server.log",
        "workers.agents:served_agent", keys=KEYS, env={**os.environ, **WORK}, cwd=TESTS,
    ) as server:
        seen = checked(script, server.url)

    paused = seen["pauseAndResume"]
    assert paused["paused"] == [
        ["1", "turn.started"], ["2", "tool.call"], ["3", "turn.paused"]
    ]
    assert paused["pausedRun"] == "paused"
    assert paused["afterFirst"] == ["2", "3"]
    assert paused["resumed"][0] == "turn.started" and paused["resumed"][-1] == "response.complete"
    assert paused["answer"] == "done: blue"
    assert paused["repeatIsTheSameRun"] is True

    dropped = seen["dropped"]
    assert dropped["ids"] == [str(n) for n in range(1, len(dropped["ids"]) + 1)]
    assert dropped["asked"] == [None, "1"]

    cancelled = seen["cancelled"]
    assert cancelled["state"] == "cancelled"
    assert cancelled["events"] == ["turn.started", "tool.call", "error"]
    assert cancelled["last"]["code"] == "run_cancelled"
    assert cancelled["again"] == "409 run_not_running"
    assert cancelled["unknown"] == "404 run_not_found"
