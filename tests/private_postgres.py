"""A private, throwaway PostgreSQL cluster that a test may stop and restart at will.

Stopping a server drops every connection to it, so a test that does must never
touch the shared server other tests run on: it gets a cluster of its own, on a
free port, with its data in a temporary directory, destroyed afterwards. Where
the server binaries (``initdb``, ``pg_ctl``) are not installed, or the cluster
cannot start, the test is skipped and says why. ``replicated_pair`` adds a streaming
standby made from the primary with ``pg_basebackup``, which a test may promote.
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

    async def crash(self) -> None:
        """``pg_ctl stop -m immediate``: no checkpoint, no goodbye to anyone connected."""
        await self._pg_ctl("-m", "immediate", "-w", "stop")

    async def promote(self) -> None:
        await self._pg_ctl("-w", "promote")

    async def _pg_ctl(self, *command: str) -> None:
        # The server's output goes to its log: a postmaster holding our pipe
        # open would keep run_process waiting for ever.
        await anyio.run_process(
            [*self.pg_ctl, *command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )


def _bindir() -> Path | None:
    candidates = [*sorted(glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    if found := shutil.which("pg_ctl"):
        candidates.insert(0, str(Path(found).resolve().parent))  # beside its other tools
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_owner() -> list[str]:
    # initdb refuses to run as root: run the cluster as the postgres user then.
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="symfonic-pg-"))
    if _as_owner():
        shutil.chown(home, "postgres")
    return home


def _pg_ctl(bindir: Path, home: Path) -> tuple[list[str], int]:
    """pg_ctl for a cluster in ``home``/data on a free port, and that port."""
    port = _free_port()
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    command = [*_as_owner(), str(bindir / "pg_ctl"), "-D", str(home / "data"), "-o", options,
               "-l", str(home / "log")]
    return command, port


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A cluster of our own, running; stopped and deleted on the way out."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip("the PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    home = _home()
    pg_ctl, port = _pg_ctl(bindir, home)
    try:
        subprocess.run(
            [*_as_owner(), str(bindir / "initdb"), "-D", str(home / "data"), "-A", "trust",
             "-U", "postgres", "--no-sync"],
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
        _removed(pg_ctl, home)


@contextmanager
def replicated_pair() -> Iterator[tuple[Cluster, Cluster]]:
    """A private primary and a standby streaming from it (asynchronous until the primary
    names it in ``synchronous_standby_names``); both removed on the way out."""
    with private_cluster() as primary:
        bindir = _bindir()
        assert bindir is not None
        home = _home()
        pg_ctl, port = _pg_ctl(bindir, home)
        source = primary.url.rpartition("/")[0].replace("postgresql://", "")
        user, _, address = source.partition("@")
        host, _, primary_port = address.partition(":")
        try:
            subprocess.run(
                [*_as_owner(), str(bindir / "pg_basebackup"), "-D", str(home / "data"),
                 "-h", host, "-p", primary_port, "-U", user, "-R", "-X", "stream",
                 "--no-sync"],
                check=True, capture_output=True,
            )
            subprocess.run(
                [*pg_ctl, "-w", "start"],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.CalledProcessError) as error:
            shutil.rmtree(home, ignore_errors=True)
            said = getattr(error, "stderr", None) or b""
            pytest.fail(f"could not start a standby of the private cluster: {error} {said!r}")
        try:
            yield primary, Cluster(f"postgresql://postgres@127.0.0.1:{port}/postgres", pg_ctl)
        finally:
            _removed(pg_ctl, home)


def _removed(pg_ctl: list[str], home: Path) -> None:
    subprocess.run(
        [*pg_ctl, "-m", "immediate", "-w", "stop"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    shutil.rmtree(home, ignore_errors=True)
