"""What the figures were measured on: the machine, the software versions, the date.

Figures without these are not reproducible, so the report prints them above
every table and ``results.json`` carries them in ``meta``.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

PACKAGES = (
    "langgraph",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langchain-core",
)
DRIVERS = ("asyncpg", "aiosqlite", "psycopg")


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _proc_field(path: str, name: str) -> str | None:
    """The value of the first ``name: value`` line of ``path``, if it can be read."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def _kib(value: str) -> int:
    """A ``/proc`` size (``"24000 kB"``) in bytes."""
    return int(value.split()[0]) * 1024


def rss_bytes(pid: int | str = "self") -> int:
    """The resident memory of process ``pid`` (default: this one) now."""
    rss = _proc_field(f"/proc/{pid}/status", "VmRSS")
    if rss is None:
        raise RuntimeError(f"no VmRSS for process {pid}")
    return _kib(rss)


def _git_commit(root: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "uncommitted"


def describe(root: Path, postgres_version: str | None) -> dict[str, Any]:
    cpu = _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown"
    memory = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpu": cpu,
            "cores": os.cpu_count(),
            "memory_bytes": _kib(memory) if memory else None,
            "os": f"{platform.system()} {platform.release()}",
        },
        "versions": {
            "python": platform.python_version(),
            "symfonic": _version("symfonic"),
            "symfonic_commit": _git_commit(root),
            **{name: _version(name) for name in PACKAGES},
            "sqlite": sqlite3.sqlite_version,
            "postgresql": postgres_version or "not measured",
            **{name: _version(name) for name in DRIVERS},
        },
    }
