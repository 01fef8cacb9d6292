"""The pauses this agent recorded and has not yet been asked to resume, trusted only for what
never changes, so a stale entry costs a read, never a wrong answer.
"""

from __future__ import annotations

from collections import OrderedDict

from symfonic.core.contracts.store import PauseRecord

DEFAULT_CAPACITY = 1024


class RecentPauses:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._records: OrderedDict[str, PauseRecord] = OrderedDict()

    def remember(self, pause: PauseRecord) -> None:
        """Keep ``pause``, just written, for the resume that may come here."""
        self._records[pause.pause_id] = pause
        if len(self._records) > self._capacity:
            self._records.popitem(last=False)

    def take(self, pause_id: str) -> PauseRecord | None:
        """The record of ``pause_id`` as it was written, once; ``None`` if not kept."""
        return self._records.pop(pause_id, None)

    def __len__(self) -> int:
        return len(self._records)
