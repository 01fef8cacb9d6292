"""The contract every benchmarked system implements: one pause/resume cycle, nothing more.

The driver (:mod:`bench.driver`) owns timing, concurrency and session rotation; a
workload owns only how its system opens its store, seeds history and performs the
two calls of a cycle, so every system is timed by the same code around the same
two awaits. ``open``/``close`` may run several times on one workload: the probes
need the store closed between passes (PostgreSQL flushes a backend's row
statistics when it disconnects).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

StoreKind = Literal["sqlite", "postgresql"]


@dataclass(frozen=True)
class HistoryBody:
    """One message of pre-existing history, as every system receives it."""

    role: Literal["human", "ai"]
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def history_messages(history: Sequence[HistoryBody]) -> list[BaseMessage]:
    """The seeded history as the langchain-core messages a model is handed (new objects)."""
    return [
        HumanMessage(body.content) if body.role == "human" else AIMessage(body.content)
        for body in history
    ]


@dataclass(frozen=True)
class WorkloadSpec:
    """What a workload needs to know to open its store; identical for every system."""

    store: StoreKind
    # A SQLite file path, or a PostgreSQL URL naming the configuration's own database.
    location: str
    concurrency: int
    history: Sequence[HistoryBody]
    # PRAGMA synchronous applied to every SQLite connection the harness can reach,
    # so all systems run at the same durability.
    sqlite_synchronous: str = "FULL"

    @property
    def sqlite_url(self) -> str:
        return f"sqlite:///{self.location}"


class WorkloadError(RuntimeError):
    """A cycle did not go as the workload requires (no pause, or no completion)."""


class Workload(ABC):
    """One system under test. Subclasses set ``system`` and implement the five steps."""

    system: str = ""

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec

    @abstractmethod
    async def open(self) -> None:
        """Connect to the store. Must not write rows (the probes reopen between passes)."""

    async def setup(self) -> None:  # noqa: B027 - optional hook, default does nothing
        """Create the schema (migrations). Called once, after the first ``open``."""

    @abstractmethod
    async def add_sessions(self, count: int) -> list[str]:
        """Create ``count`` new sessions, each holding the spec's history; return their keys.

        May be called several times (the driver sizes the session pool after the
        warm-up); keys must never repeat.
        """

    @abstractmethod
    async def pause(self, session: str) -> Any:
        """Start a turn that must end paused; return what ``resume`` needs."""

    @abstractmethod
    async def resume(self, session: str, handle: Any) -> None:
        """Approve the pause; the tool runs and the turn must complete."""

    @abstractmethod
    async def close(self) -> None:
        """Release every connection, so the server sees the backends go away."""

    def settings(self) -> dict[str, Any]:
        """Non-default settings the workload applied (recorded in results.json)."""
        return {}
