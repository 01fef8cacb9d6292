"""A PostgreSQL restart under load loses and duplicates nothing; workers reconnect.

The restart is real (``pg_ctl restart -m fast``: every connection is closed, the
server is unreachable until it is back), on a private throwaway cluster so that
restarting it disturbs nothing else using the shared server. The test is skipped
where the PostgreSQL server binaries (``initdb``, ``pg_ctl``) are not installed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from glob import glob
from pathlib import Path

import anyio
import pytest

from workers.load import run_load

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]


@dataclass(frozen=True)
class Cluster:
    url: str
    pg_ctl: list[str]  # pg_ctl for this cluster, as its owner, with its options and log

    async def restart(self) -> None:
        # The server's output goes to its log: a postmaster holding our pipe
        # open would keep run_process waiting for ever.
        await anyio.run_process(
            [*self.pg_ctl, "-m", "fast", "-w", "restart"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )


def _bindir() -> Path | None:
    candidates = [*sorted(glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    if found := shutil.which("pg_ctl"):
        candidates.insert(0, str(Path(found).parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def private_postgres() -> Iterator[Cluster]:
    bindir = _bindir()
    if bindir is None:
        pytest.skip("the PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    # initdb refuses to run as root: run the cluster as the postgres user then.
    as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = Path(tempfile.mkdtemp(prefix="symfonic-pg-"))
    if as_owner:
        shutil.chown(home, "postgres")
    data, port = home / "data", _free_port()
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    pg_ctl = [
        *as_owner, str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
        "-l", str(home / "log"),
    ]
    try:
        subprocess.run(
            [*as_owner, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
             "--no-sync"],
            check=True, capture_output=True,
        )
        subprocess.run(
            [*pg_ctl, "-w", "start"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        shutil.rmtree(home, ignore_errors=True)
        pytest.skip(f"could not start a private PostgreSQL cluster: {error}")
    try:
        yield Cluster(f"postgresql://postgres@127.0.0.1:{port}/postgres", pg_ctl)
    finally:
        subprocess.run(
            [*pg_ctl, "-m", "immediate", "-w", "stop"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(home, ignore_errors=True)


async def test_a_restart_under_load_loses_and_duplicates_nothing(
    private_postgres: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYMFONIC_TEST_WORK_SECONDS", "0.05")
    restarts = 0

    async def restart_midway(done: anyio.Event) -> None:
        nonlocal restarts
        await anyio.sleep(0.25)  # let the first turns get going
        if not done.is_set():
            await private_postgres.restart()
            restarts += 1

    load = await run_load(private_postgres.url, restart_midway)
    assert restarts == 1 and load.failures() > 0, "the load never met the restart"
