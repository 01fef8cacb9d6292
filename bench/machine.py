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


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


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
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpu": _cpu_model(),
            "cores": os.cpu_count(),
            "memory_bytes": _memory_bytes(),
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
