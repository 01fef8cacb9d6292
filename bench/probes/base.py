"""How bytes and rows written are measured: one probe per store, the same for every system.

A probe watches the database from its own connection, never from inside a
workload, so every system is measured by identical code. ``begin_bytes`` and
``end_bytes`` bracket the timed section; ``begin_rows`` and ``end_rows`` bracket a
separate counting pass run with the workload closed at both ends, the one
moment each store can count rows exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class StoreProbe(ABC):
    bytes_method: str = ""
    rows_method: str = ""
    # Whether ``reset`` leaves first-touch costs that a warm-up should absorb.
    rewarm_after_reset: bool = False

    def prepare_store(self) -> None:  # noqa: B027 - optional hook, default does nothing
        """Make the empty store ready before any workload opens it."""

    def reset(self) -> str | None:
        """Bring the store to the same starting state for every system; a note if it can't."""
        return None

    def interference(self) -> list[str]:
        """Notes on anything else that wrote during the timed section (read after it)."""
        return []

    def details(self) -> dict[str, Any]:
        """Raw readings behind the bytes figure, for results.json."""
        return {}

    @abstractmethod
    def begin_bytes(self) -> None: ...

    @abstractmethod
    def end_bytes(self) -> int:
        """Bytes written since ``begin_bytes``."""

    @abstractmethod
    def begin_rows(self) -> None: ...

    @abstractmethod
    def end_rows(self) -> int:
        """Rows inserted + updated + deleted since ``begin_rows``."""

    def close(self) -> None:  # noqa: B027 - optional hook, default does nothing
        """Release the probe's own connection."""
