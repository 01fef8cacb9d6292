"""A real ``symfonic serve`` process on a free loopback port, for tests that need one."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from http_support import free_port

KEYS = "alice=alice-secret-key,carol=carol-secret-key:approver"
ALICE = {"Authorization": "Bearer alice-secret-key"}


# How the tests start symfonic by default: the interpreter running them.
PYTHON_M = (sys.executable, "-m", "symfonic")


def console_script() -> Path:
    """The ``symfonic`` script pip installed beside this interpreter, as a user runs it."""
    script = Path(sysconfig.get_path("scripts")) / "symfonic"
    assert script.is_file(), f"no console script at {script}; pip install -e '.[dev]'"
    return script


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text()


@contextmanager
def serving(
    store: str | None,
    log: Path,
    *args: str,
    keys: str = KEYS,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    program: Sequence[str | Path] = PYTHON_M,
    port: int | None = None,
) -> Iterator[Server]:
    """``symfonic serve ARGS`` on ``store`` (``None``: no ``--store``), once healthy.

    ``env`` replaces the inherited environment (the keys and unbuffered output
    are added to it); ``cwd`` is where the server runs; ``program`` is how
    symfonic is started (``[console_script()]``: as a user types it); ``port``:
    where it listens (default: a free one).
    """
    port = port or free_port()
    env = {**(os.environ if env is None else env), "SYMFONIC_API_KEYS": keys,
           "PYTHONUNBUFFERED": "1"}
    store_option = [] if store is None else ["--store", store]
    command = [*program, "serve", "--port", str(port), *store_option,
               "--log-level", "warning", *args]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=cwd
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_healthy(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_healthy(server: Server, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"the server exited:\n{server.output()}")
        try:
            if httpx.get(f"{server.url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)  # nothing to await across a process boundary but the socket
    raise AssertionError(f"the server did not become healthy:\n{server.output()}")


def paused(url: str) -> str:
    """A turn of the demo agent on the server at ``url`` that pauses for approval; its token."""
    session = httpx.post(f"{url}/v1/sessions", json={}, headers=ALICE).json()["session_id"]
    turn = httpx.post(
        f"{url}/v1/sessions/{session}/turns",
        json={"message": "Pay alice 42 EUR for the design work"},
        headers={**ALICE, "Accept": "application/json"},
        timeout=10,
    ).json()
    assert turn["status"] == "paused", turn
    return str(turn["pause"]["token"])


def answered(url: str, token: str) -> None:
    """The pause of ``token`` approved on the server at ``url``, its turn complete."""
    resumed = httpx.post(
        f"{url}/v1/resume",
        json={"token": token, "answer": {"decision": "approve"}},
        headers={**ALICE, "Accept": "application/json"},
        timeout=10,
    ).json()
    assert resumed["status"] == "complete", resumed
