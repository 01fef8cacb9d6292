"""The systems under test, by name, each behind :class:`bench.workloads.base.Workload`.

Imports are guarded per system: a system whose packages do not import (symfonic
mid-development, LangGraph's optional group not installed) is reported as
unavailable with the import error, and the harness goes on with the others.
"""

from __future__ import annotations

import importlib

from bench.workloads.base import StoreKind, Workload

SYSTEMS = ("symfonic", "langgraph", "floor")
# Measured only when named: symfonic on SQLite with ``?synchronous=normal``, what
# syncing every commit costs, beside ``symfonic`` in the same run.
OPTIONAL_SYSTEMS = ("symfonic+normal",)
# symfonic from another source tree (``--baseline SRC``), measured beside the installed
# one: a change's before and after, interleaved configuration by configuration.
BASELINE = "symfonic@baseline"

_SYMFONIC = "bench.workloads.symfonic_workload:SymfonicWorkload"
# system → "module:Class", or per store where each store has its own class.
_REGISTRY: dict[str, str | dict[StoreKind, str]] = {
    "symfonic": _SYMFONIC,
    BASELINE: _SYMFONIC,  # the same workload; its child imports the baseline's tree
    "symfonic+normal": "bench.workloads.symfonic_workload:SymfonicNormalWorkload",
    "langgraph": "bench.workloads.langgraph_workload:LangGraphWorkload",
    "floor": {
        "sqlite": "bench.workloads.floor:SqliteFloor",
        "postgresql": "bench.workloads.floor:PostgresFloor",
    },
}


def _resolve(target: str) -> type[Workload]:
    module_name, _, attribute = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attribute)
    if not (isinstance(cls, type) and issubclass(cls, Workload)):
        raise TypeError(f"{target} is not a Workload")
    return cls


def unavailable_reason(system: str) -> str | None:
    """Why ``system`` cannot run here, or ``None`` when it can."""
    target = _REGISTRY.get(system)
    if target is None:
        return f"unknown system {system!r} (known: {', '.join(SYSTEMS + OPTIONAL_SYSTEMS)})"
    try:
        for each in [target] if isinstance(target, str) else target.values():
            _resolve(each)
    except Exception as error:  # any import-time failure makes the system unavailable
        return f"{type(error).__name__}: {error}"
    return None


def workload_class(system: str, store: StoreKind) -> type[Workload]:
    target = _REGISTRY[system]
    return _resolve(target if isinstance(target, str) else target[store])
