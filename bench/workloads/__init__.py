"""The systems under test, by name, each behind :class:`bench.workloads.base.Workload`.

Imports are guarded per system: a system whose packages do not import (symfonic
mid-development, LangGraph's optional group not installed) is reported as
unavailable with the import error, and the harness goes on with the others.
"""

from __future__ import annotations

import importlib

from bench.workloads.base import StoreKind, Workload

SYSTEMS = ("symfonic", "langgraph", "floor", "floor+model")
# Measured only when named (``--systems symfonic,symfonic+otel``): what tracing costs;
# what syncing every SQLite commit costs (``symfonic+normal``, ``?synchronous=normal``).
OPTIONAL_SYSTEMS = ("symfonic+otel", "symfonic+normal")
# symfonic from another source tree (``--baseline SRC``), measured beside the installed
# one: a change's before and after, interleaved configuration by configuration.
BASELINE = "symfonic@baseline"

_SYMFONIC: dict[StoreKind, str] = {
    "sqlite": "bench.workloads.symfonic_workload:SymfonicWorkload",
    "postgresql": "bench.workloads.symfonic_workload:SymfonicWorkload",
}
# system → store → "module:Class"
_REGISTRY: dict[str, dict[StoreKind, str]] = {
    "symfonic": _SYMFONIC,
    BASELINE: _SYMFONIC,  # the same workload, importing the baseline's tree
    "symfonic+otel": {
        "sqlite": "bench.workloads.symfonic_otel:SymfonicOtelWorkload",
        "postgresql": "bench.workloads.symfonic_otel:SymfonicOtelWorkload",
    },
    "symfonic+normal": {
        "sqlite": "bench.workloads.symfonic_normal:SymfonicNormalWorkload",
        "postgresql": "bench.workloads.symfonic_normal:SymfonicNormalWorkload",
    },
    "langgraph": {
        "sqlite": "bench.workloads.langgraph_workload:LangGraphWorkload",
        "postgresql": "bench.workloads.langgraph_workload:LangGraphWorkload",
    },
    "floor": {
        "sqlite": "bench.workloads.floor_sqlite:SqliteFloor",
        "postgresql": "bench.workloads.floor_postgres:PostgresFloor",
    },
    "floor+model": {
        "sqlite": "bench.workloads.floor_model:ModelFloor",
        "postgresql": "bench.workloads.floor_model:ModelFloor",
    },
}

# What each system must be able to import before a child is worth starting.
_PROBES: dict[str, tuple[str, ...]] = {
    "symfonic": (
        "symfonic:SymfonicAgent",
        "symfonic.testing:ScriptedChatModel",
        "symfonic.testing:call",
        "symfonic.testing:reply",
    ),
    # Its symfonic is the baseline tree's, importable only in its own child.
    BASELINE: (),
    "symfonic+otel": (
        "symfonic:SymfonicAgent",
        "opentelemetry.sdk.trace:TracerProvider",
        "opentelemetry.sdk.metrics:MeterProvider",
    ),
    "symfonic+normal": ("symfonic:SymfonicAgent",),
    "langgraph": (
        "langgraph.types:interrupt",
        "langgraph.checkpoint.sqlite.aio:AsyncSqliteSaver",
        "langgraph.checkpoint.postgres.aio:AsyncPostgresSaver",
    ),
    "floor": ("sqlite3:connect", "asyncpg:create_pool"),
    "floor+model": ("sqlite3:connect", "asyncpg:create_pool"),
}


def _resolve(target: str) -> object:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def unavailable_reason(system: str) -> str | None:
    """Why ``system`` cannot run here, or ``None`` when it can."""
    if system not in _REGISTRY:
        return f"unknown system {system!r} (known: {', '.join(SYSTEMS + OPTIONAL_SYSTEMS)})"
    try:
        for target in _PROBES[system]:
            _resolve(target)
        for target in _REGISTRY[system].values():
            _resolve(target)
    except Exception as error:  # any import-time failure makes the system unavailable
        return f"{type(error).__name__}: {error}"
    return None


def workload_class(system: str, store: StoreKind) -> type[Workload]:
    cls = _resolve(_REGISTRY[system][store])
    if not (isinstance(cls, type) and issubclass(cls, Workload)):
        raise TypeError(f"{_REGISTRY[system][store]} is not a Workload")
    return cls
