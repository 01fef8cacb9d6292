"""Which agents ``symfonic serve`` serves, and the one store it serves them on.

An agent is named ``MODULE:ATTR`` and imported as ``python -m`` would import it: the
current directory first, then ``PYTHONPATH`` and the installed packages.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.store import Store
from symfonic.storage import DEFAULT_STORE, masked_url

DEFAULT_AGENT = "symfonic.demo:agent"


def importable_from_here() -> None:
    """Put the current directory first on ``sys.path``, as ``python -m`` does: the installed
    ``symfonic`` script starts with its own directory there instead."""
    here = os.getcwd()
    if not any(entry in ("", ".", here) for entry in sys.path):
        sys.path.insert(0, here)


def load_agent(spec: str) -> SymfonicAgent:
    """``module:attr`` naming an agent, or a function that returns one."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{spec!r} is not MODULE:ATTR, e.g. {DEFAULT_AGENT}")
    if module_name.endswith(".py"):
        module = module_name.removesuffix(".py").replace("/", ".")
        raise ConfigurationError(f"{spec!r} names a file; name its module: {module}:{attr}")
    importable_from_here()
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(
            f"cannot import {module_name!r} from {os.getcwd()} or the installed packages: {error}"
        ) from error
    except SyntaxError as error:
        raise ConfigurationError(
            f"{module_name!r} has a syntax error at {error.filename}:{error.lineno}: {error.msg}"
        ) from error
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigurationError(f"{module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not isinstance(target, SymfonicAgent) and callable(target):
        target = target()
    if not isinstance(target, SymfonicAgent):
        kind = type(target).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ConfigurationError(f"{spec} is {article} {kind}, not a SymfonicAgent")
    return target


def serving_store(override: str | None, agents: Sequence[SymfonicAgent]) -> str | Store:
    """The one store all ``agents`` are served on: ``--store``, else ``SYMFONIC_STORE``, else
    the one they declare; two declared stores are refused, as serving both on either would
    put one agent's sessions where its module says they are not."""
    chosen = override or os.environ.get("SYMFONIC_STORE")
    if chosen:
        return chosen
    declared: dict[str, tuple[str | Store, list[str]]] = {}
    for agent in agents:
        store = agent.declared_store
        if store is None:
            continue
        key = store if isinstance(store, str) else f"store object {id(store)}"
        declared.setdefault(key, (store, []))[1].append(agent.name)
    if len(declared) > 1:
        which = "; ".join(
            f"{', '.join(names)}: {_shown(store)}" for store, names in declared.values()
        )
        raise ConfigurationError(
            f"the agents declare different stores ({which}) and one service serves them "
            "on one store: pass --store or set SYMFONIC_STORE to choose it"
        )
    if declared:
        return next(iter(declared.values()))[0]
    return DEFAULT_STORE


def _shown(store: str | Store) -> str:
    return masked_url(store if isinstance(store, str) else store.url)
