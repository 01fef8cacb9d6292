"""The pauses this agent recorded and has not yet been asked to resume.

A resume must know its pause before it claims it: whose it is, who may answer,
the answer's schema, when it expires. Those never change once the pause is
written, and the agent that recorded it has just built that very record, so a
resume here takes it from memory instead of reading the row again. Only what
never changes is trusted: whether the pause is still pending is decided by the
claim, the one conditional statement, and a claim that loses reads the row to
say why (or to replay the answer that won). A stale entry therefore costs a
read, never a wrong answer. (Which pause a second pause superseded is settled
inside the store's transaction; the kept record does not know it, and no
resume asks.)

Each entry is taken once, and the oldest go first past ``capacity``, so memory
stays bounded whatever the number of pauses waiting for people. What the read
saves is measured in docs/internals.md.
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
