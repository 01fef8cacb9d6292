"""A private, throwaway PostgreSQL cluster that a test may stop and restart at will.

Stopping a server drops every connection to it, so a test that does must never
touch the shared server other tests run on: it gets a cluster of its own, on a
free port, with its data in a temporary directory, destroyed afterwards. Where
the server binaries (``initdb``, ``pg_ctl``) are not installed, or the cluster
cannot start, the test is skipped and says why.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from glob import glob
from pathlib import Path

import anyio
import pytest


@dataclass(frozen=True)
class Cluster:
    url: str
    pg_ctl: list[str]  # pg_ctl for this cluster, as its owner, with its options and log

    async def restart(self) -> None:
        await self._pg_ctl("-m", "fast", "-w", "restart")

    async def stop(self) -> None:
        """The first half of a restart: every connection closed, nothing accepted."""
        await self._pg_ctl("-m", "fast", "-w", "stop")

    async def start(self) -> None:
        await self._pg_ctl("-w", "start")

    async def _pg_ctl(self, *command: str) -> None:
        # The server's output goes to its log: a postmaster holding our pipe
        # open would keep run_process waiting for ever.
        await anyio.run_process(
            [*self.pg_ctl, *command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
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


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A cluster of our own, running; stopped and deleted on the way out."""
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
