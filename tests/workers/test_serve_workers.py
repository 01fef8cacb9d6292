"""``symfonic serve --workers 3`` as users run it, on SQLite and on the real PostgreSQL: three
processes answer on one port, one killed with kill -9 is started again, turns pause and resume
across them, and SIGTERM to the supervisor stops every worker. A supervisor killed with kill -9
takes its workers with it.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

import httpx
import pytest

from serve_support import ALICE, answered, paused, serving

pytestmark = pytest.mark.slow

AGENT = """\
import os
from pathlib import Path

import anyio

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, call, reply


async def where() -> str:
    \"\"\"Say which process runs this turn.\"\"\"
    await anyio.sleep(0.2)  # so that turns overlap and the workers share them
    with Path(os.environ["WORKERS_TEST_CALLS"]).open("a") as calls:
        calls.write(f"{os.getpid()}\\n")
    return "here"


def respond(messages):
    return reply("done") if messages[-1].type == "tool" else call("where", {})


agent = SymfonicAgent(name="worker", model=ScriptedChatModel(respond=respond), tools=[where])
"""


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc: no public pid is needed)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def turn(url: str) -> None:
    session = httpx.post(f"{url}/v1/sessions", json={"agent": "worker"}, headers=ALICE)
    done = httpx.post(
        f"{url}/v1/sessions/{session.json()['session_id']}/turns",
        json={"message": "where?"},
        headers={**ALICE, "Accept": "application/json"},
        timeout=20,
    )
    assert done.json()["status"] == "complete", done.text


def answering(url: str, calls: Path, workers: set[int]) -> set[int]:
    """The processes that ran turns sent at once on new connections, until all ``workers`` did."""
    deadline = time.monotonic() + 60
    seen: set[int] = set()
    with ThreadPoolExecutor(12) as pool:
        while seen != workers and time.monotonic() < deadline:
            list(pool.map(lambda _: turn(url), range(12)))
            seen = {int(pid) for pid in calls.read_text().split()}
    return seen


def test_three_workers_answer_on_one_port_and_one_killed_is_started_again(
    store_url: str, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.txt"
    calls.touch()
    (tmp_path / "workers_agents.py").write_text(AGENT)
    env = {**os.environ, "WORKERS_TEST_CALLS": str(calls)}
    options = ("symfonic.demo:agent", "workers_agents:agent", "--workers", "3")
    with serving(store_url, tmp_path / "serve.log", *options, env=env, cwd=tmp_path) as server:
        workers = children(server.process.pid)
        assert len(workers) == 3, server.output()
        assert answering(server.url, calls, workers) == workers
        killed = min(workers)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while len(now := children(server.process.pid) - {killed}) < 3:
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.1)
        assert f"worker {killed} ended (killed by SIGKILL); starting another" in server.output()
        for _ in range(3):
            answered(server.url, paused(server.url))
    assert server.process.returncode == 0, server.output()
    assert not [pid for pid in now if Path(f"/proc/{pid}").exists()], "a worker outlived it"


def ended(pid: int) -> bool:
    """Whether ``pid`` has exited: gone, or a zombie its new parent has not reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def test_workers_stop_when_the_supervisor_is_killed(sqlite_url: str, tmp_path: Path) -> None:
    options = ("symfonic.demo:agent", "--workers", "2")
    with serving(sqlite_url, tmp_path / "serve.log", *options) as server:
        workers = children(server.process.pid)
        assert len(workers) == 2, server.output()
        server.process.kill()  # kill -9: the supervisor forwards nothing
        server.process.wait()
        deadline = time.monotonic() + 20
        try:
            while not all(ended(pid) for pid in workers):
                assert time.monotonic() < deadline, f"orphaned workers serve: {server.output()}"
                time.sleep(0.1)
        finally:
            for pid in workers:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{server.url}/v1/health", timeout=2)
