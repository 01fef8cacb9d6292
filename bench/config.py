"""One configuration of the matrix, as the parent hands it to a child (JSON both ways)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.workloads.base import StoreKind


@dataclass(frozen=True)
class ChildConfig:
    system: str
    store: StoreKind
    # SQLite: the database file; PostgreSQL: the URL of this configuration's database.
    location: str
    history: int
    concurrency: int
    # Cap on timed cycles (all slots together) and the time box; whichever comes first.
    cycles: int
    seconds: float
    # The time box never stops the timed section before this many cycles started.
    min_cycles: int
    # Warm-up cycles per slot, untimed, on the same sessions as the timed section.
    warmup: int
    # Cycles of the separate row-counting pass (one slot).
    count_cycles: int
    sqlite_synchronous: str
    # Freeze the objects alive after the warm-up out of the garbage collector's
    # full collections (gc.freeze), as a long-running worker does after start-up.
    gc_freeze: bool = True
    # A source tree put first on the child's import path, so its ``symfonic`` is the
    # one measured (``--baseline``); empty: the installed one.
    source: str = ""

    @property
    def label(self) -> str:
        return f"{self.system}/{self.store}/h{self.history}/c{self.concurrency}"

    @property
    def cycles_per_slot(self) -> int:
        return max(1, -(-self.cycles // self.concurrency))

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> ChildConfig:
        data: dict[str, Any] = json.loads(path.read_text())
        return cls(**data)
