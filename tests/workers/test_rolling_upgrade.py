"""A rolling upgrade on one PostgreSQL database: release N (the tree at 1bd1df4, the commit
before the schema moved to 0024) and this tree serve one store. What one writes (pauses, queued
messages, webhook deliveries) the other settles; N keeps serving while this tree's ``symfonic
migrate`` runs; and N's own store tests pass against this tree's schema, the rule every migration
of a release keeps (docs/deploy.md). Slow: about a minute and a half, half of it N's store tests.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from serve_support import ALICE, KEYS, answered, paused, serving
from symfonic.storage.revision import SCHEMA_HEAD
from webhook_support import SECRET, Receiver, receiving

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RELEASE_N = "1bd1df4"
HERE = Path(__file__).resolve().parent
MIGRATE = (sys.executable, "-m", "symfonic", "migrate", "--store")
SERVED = ("symfonic.demo:agent", "rolling_agents:agent", "--sweep-interval", "0.25")
OPERATOR = {"Authorization": "Bearer ops-secret-key"}
AGENT = """\
import os
from pathlib import Path

import anyio
from langchain_core.messages import HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, call, reply

CALLS = Path(os.environ["ROLLING_CALLS"])


async def work(note: str) -> str:
    \"\"\"Work on a note; one that starts with "hold" waits for a file named after it.\"\"\"
    with CALLS.open("a") as calls:
        calls.write(f"{note}|{os.getpid()}\\n")
    while note.startswith("hold") and not (CALLS.parent / note.replace(" ", "_")).exists():
        await anyio.sleep(0.02)
    return f"worked on {note}"


def respond(messages):
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    answered = [m for m in messages[start:] if isinstance(m, ToolMessage)]
    if answered:
        return reply(f"done: {text_of(answered[-1])}")
    return call("work", {"note": text_of(messages[start])})


agent = SymfonicAgent(name="worker", model=ScriptedChatModel(respond=respond), tools=[work])
"""
# Release N's tests of the store itself, those that write and read the rows a release leaves
# to the next (pauses, sessions, votes, the queue, the outbox); its migration, outage and
# SQLite-only tests say nothing about this tree's schema. Under schema 0024 the audit records
# N writes wait unsealed for a newer worker's sealer, so N's reads of the chain alone
# (UNSEALED) see them only once this tree's workers run, as in a rolling upgrade they do.
STORE_TESTS = [
    f"tests/storage/test_{name}.py"
    for name in ("store_pauses", "store_sessions", "approval_votes", "run_queue", "webhook_outbox")
]
UNSEALED = (
    "test_a_principal_is_counted_once_and_a_second_vote_is_a_replay",
    "test_an_edit_is_a_new_proposal_and_a_vote_for_the_old_one_writes_nothing",
    "test_every_vote_is_an_audit_record_in_the_chain",
)
# Release N's store tests, each on a database copied from one this tree migrated. N predates
# the check that lets a worker open a newer schema it can run beside, so it is told this
# tree's head as its own: what a worker of N already running when the migration ran sees.
NEWER_SCHEMA = """\
import asyncio
import os
import uuid

import asyncpg
import pytest

ADMIN = os.environ.get("SYMFONIC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
TEMPLATE = os.environ["ROLLING_TEMPLATE"]


async def admin(statement):
    connection = await asyncpg.connect(ADMIN)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture
def postgres_url():
    name = f"{TEMPLATE}_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"'))
    try:
        yield f"{ADMIN.rpartition('/')[0]}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(autouse=True)
def newer_schema(monkeypatch):
    monkeypatch.setattr("symfonic.storage.postgres.SCHEMA_HEAD", os.environ["ROLLING_HEAD"])
"""


@pytest.fixture(scope="module")
def release_n(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Release N's tree from this clone's history, and the environment that runs it."""
    root = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    if root.returncode != 0:
        pytest.skip("release N's tree comes from the git history, and this is no clone")
    tree = tmp_path_factory.mktemp("release_n")
    archive = subprocess.run(
        ["git", "-C", root.stdout.strip(), "archive", RELEASE_N], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    path = [str(tree / "src")]
    if importlib.util.find_spec("tenacity") is None:  # N needs it; this tree does not
        deps = tmp_path_factory.mktemp("release_n_deps")
        pip = [sys.executable, "-m", "pip", "install", "-q", "--target", str(deps)]
        subprocess.run([*pip, "tenacity>=8.3"], check=True)
        path.append(str(deps))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "ROOT": str(tree)}
    head = _python(env, "import symfonic.storage.revision as r; print(r.SCHEMA_HEAD)")
    assert head < SCHEMA_HEAD, f"release N runs schema {head}, not one older than {SCHEMA_HEAD}"
    return {**env, "ROLLING_N_HEAD": head}


def _python(env: dict[str, str], code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def _noted(calls: Path, note: str) -> list[int]:
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [int(pid) for said, _, pid in (line.partition("|") for line in lines) if said == note]


def _until(check: Callable[[], object], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.05)


def _queued_runs_on_holder(holder: str, writer: str, calls: Path, tag: str) -> list[int]:
    """A message queued on ``writer`` behind a turn running on ``holder``: the pids that ran it."""
    sessions = httpx.post(f"{holder}/v1/sessions", json={"agent": "worker"}, headers=ALICE)
    turns = f"/v1/sessions/{sessions.json()['session_id']}/turns"
    held = httpx.post(
        holder + turns, json={"message": f"hold {tag}", "background": True}, headers=ALICE
    )
    assert held.status_code == 202, held.text
    _until(lambda: _noted(calls, f"hold {tag}"), "the held turn's tool")
    queued = httpx.post(
        writer + turns, json={"message": f"work {tag}", "on_busy": "enqueue"}, headers=ALICE
    )
    assert queued.status_code == 202, queued.text
    run = f"{writer}/v1/runs/{queued.json()['run_id']}"
    assert httpx.get(run, headers=ALICE).json()["state"] == "queued"
    (calls.parent / f"hold_{tag}").touch()
    _until(lambda: httpx.get(run, headers=ALICE).json()["state"] == "complete", "the queued run")
    return _noted(calls, f"work {tag}")


def _hook(receiver: Receiver) -> tuple[str, ...]:
    """Serve options that send each ``pause.created``, with its token, to ``receiver``."""
    return (
        *("--webhook", receiver.url, "--webhook-event", "pause.created"),
        "--webhook-include-token",
    )


def _tokens(receiver: Receiver) -> set[str]:
    """The tokens of the ``pause.created`` that reached ``receiver``, each verified."""
    return {request.payload["data"]["token"] for request in receiver.of_type("pause.created")}


def _unsettled(url: str) -> list[object]:
    answer = httpx.get(f"{url}/v1/webhooks/deliveries", headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["deliveries"])


def test_each_release_settles_what_the_other_wrote_through_the_migration(
    postgres_url: str, release_n: dict[str, str], tmp_path: Path
) -> None:
    calls = tmp_path / "calls.txt"
    (tmp_path / "rolling_agents.py").write_text(AGENT)
    shared = {"ROLLING_CALLS": str(calls), "SYMFONIC_WEBHOOK_SECRET": SECRET}
    old, new = {**release_n, **shared}, {**os.environ, **shared}
    keys = f"{KEYS},ops=ops-secret-key:operator"
    with (
        receiving() as to_n,
        receiving() as to_n1,
        serving(
            postgres_url, tmp_path / "n.log", *SERVED, *_hook(to_n), keys=keys, env=old,
            cwd=tmp_path,
        ) as n,
    ):
        before = [paused(n.url)]
        migrating = subprocess.Popen([*MIGRATE, postgres_url], stdout=subprocess.PIPE, text=True)
        during = []
        while migrating.poll() is None:  # N serves turns that pause all along
            during.append(paused(n.url))
        said = migrating.communicate()[0]
        assert f"migrated from schema {release_n['ROLLING_N_HEAD']} to {SCHEMA_HEAD}" in said
        floor = re.search(r"workers of schema (\d+) and later can run beside it", said)
        assert floor is not None and floor[1] <= release_n["ROLLING_N_HEAD"], (
            f"{said}: this tree's migrations leave release N unable to run beside them; "
            "contracting changes wait for a later release (docs/deploy.md)"
        )
        assert during, "N answered no turn while the migration ran"
        after = [paused(n.url)]
        with serving(
            postgres_url, tmp_path / "n1.log", *SERVED, *_hook(to_n1), "--no-migrate",
            keys=keys, env=new, cwd=tmp_path,
        ) as n1:
            for token in [*before, *during, *after]:
                answered(n1.url, token)
            on_n, on_n1 = paused(n.url), paused(n1.url)
            # Each pause.created is owed to both URLs in its turn's transaction, and a release
            # sends only to the URLs it was given: N+1 sends what N owed, and N what N+1 owed.
            # (A token is sent only while its pause waits: the pauses are answered after.)
            _until(lambda: on_n in _tokens(to_n1), "N+1's delivery of what N owed")
            _until(lambda: on_n1 in _tokens(to_n), "N's delivery of what N+1 owed")
            _until(lambda: not _unsettled(n1.url), "every delivery settled")
            answered(n.url, on_n1)
            answered(n1.url, on_n)
            pids = n.process.pid, n1.process.pid
            assert _queued_runs_on_holder(n.url, n1.url, calls, "a") == [pids[0]]
            assert _queued_runs_on_holder(n1.url, n.url, calls, "b") == [pids[1]]


def test_release_ns_store_tests_pass_against_this_schema(
    postgres_url: str, release_n: dict[str, str]
) -> None:
    subprocess.run([*MIGRATE, postgres_url], check=True, capture_output=True)
    tree = Path(release_n["ROOT"])
    (tree / "tests" / "storage" / "conftest.py").write_text(NEWER_SCHEMA)
    env = {
        **release_n,
        "ROLLING_TEMPLATE": postgres_url.rpartition("/")[2],
        "ROLLING_HEAD": SCHEMA_HEAD,
    }
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *STORE_TESTS,
            "-k",
            " and ".join(["postgres", *(f"not {name}" for name in UNSEALED)]),
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stdout[-4000:]
    passed = re.search(r"(\d+) passed", ran.stdout)
    assert passed is not None and int(passed[1]) >= 30, ran.stdout[-2000:]
