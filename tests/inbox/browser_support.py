"""A real browser on a real ``symfonic serve``: what the inbox's browser tests share.

The browser is Debian's Chromium (``chromium_support``: where it is, and when
a browser test is skipped or, in CI, fails).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from conftest import drop_postgres_database, fresh_postgres_database, require_postgres
from serve_support import Server, serving

KEYS = "alice=alice-secret-key,bob=bob-secret-key"
HERE = Path(__file__).parent
AGENTS = ("inbox_agents:payments", "inbox_agents:quick")
QUICK_TTL = 4
ESCALATE_AFTER = 2
PAYMENTS_TTL = 3600
T = TypeVar("T")


def _off_the_browsers_loop(work: Callable[[], T]) -> T:
    # Playwright's sync API runs an event loop on this thread; the PostgreSQL
    # helpers start their own, which only another thread may do.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database (skipped or failed as the suite's switch says)."""
    _off_the_browsers_loop(require_postgres)
    url, name = _off_the_browsers_loop(fresh_postgres_database)
    try:
        yield url
    finally:
        _off_the_browsers_loop(lambda: drop_postgres_database(name))


@dataclass
class Inbox:
    """A served agent module, its ledger of payments really sent, and an API client."""

    server: Server
    ledger: Path

    @property
    def url(self) -> str:
        return self.server.url

    def payments(self, to: str) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        lines = self.ledger.read_text().splitlines()
        return [entry for entry in map(json.loads, lines) if entry["to"] == to]


@contextmanager
def serving_inbox(
    store: str,
    workdir: Path,
    name: str = "server",
    keys: str = KEYS,
    agents: tuple[str, ...] = AGENTS,
    options: tuple[str, ...] = (),
) -> Iterator[Inbox]:
    """``symfonic serve`` the test ``agents`` on ``store``, with Alice's and Bob's keys
    (or ``keys``) and ``symfonic serve``'s ``options``."""
    ledger = workdir / "ledger.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "INBOX_TEST_LEDGER": str(ledger),
        "INBOX_TEST_QUICK_TTL": str(QUICK_TTL),
        "INBOX_TEST_ESCALATE_AFTER": str(ESCALATE_AFTER),
    }
    log = workdir / f"{name}.log"
    with serving(store, log, *agents, *options, keys=keys, env=env) as server:
        yield Inbox(server, ledger)


def bearer(name: str) -> dict[str, str]:
    """``name``'s key; ``local`` (a server without keys) sends none."""
    if name == "local":
        return {"Accept": "application/json"}
    return {"Authorization": f"Bearer {name}-secret-key", "Accept": "application/json"}


def ask(url: str, message: str, *, who: str = "alice", agent: str | None = None) -> dict[str, Any]:
    """A session of ``who`` whose first turn on ``message`` paused: the turn's outcome."""
    with httpx.Client(base_url=url, headers=bearer(who), timeout=30) as client:
        created = client.post("/v1/sessions", json={} if agent is None else {"agent": agent})
        assert created.status_code == 201, created.text
        session_id = created.json()["session_id"]
        turn = client.post(f"/v1/sessions/{session_id}/turns", json={"message": message})
        assert turn.status_code == 200, turn.text
        outcome: dict[str, Any] = turn.json()
        assert outcome["status"] == "paused", outcome
        return outcome


def pause_state(url: str, pause_id: str, who: str = "alice") -> str | None:
    """The state of a pending pause as ``who`` lists it, or ``None`` if not listed."""
    listed = httpx.get(f"{url}/v1/pauses", headers=bearer(who), timeout=10).json()["pauses"]
    return next((p["state"] for p in listed if p["pause_id"] == pause_id), None)

