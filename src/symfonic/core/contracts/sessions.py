"""Sessions and the first turns that hold them.

History only grows, one published turn at its `base_revision`, and a run marker is set
or refused in one conditional statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import MessageBody


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    principal: str
    agent: str
    revision: int
    metadata: dict[str, Any]
    created_at: datetime
    running: bool = False
    # The turn holding the session while `running`: what a takeover read as it was asked.
    run_id: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RunStart:
    """A first turn's run marker, set: the session as it was marked, its committed
    history at that revision, and whether a pause was still waiting for an answer
    (only possible when such a pause was not to refuse the turn)."""

    session: SessionRecord
    history: list[MessageBody]
    pending_pause: bool


@dataclass(frozen=True)
class RunRequest:
    """A first turn asking to hold its session, and what may refuse it.

    Refused when the session does not exist, is not ``principal``'s (unless
    ``None``), has another unexpired run marker, has a pause being answered, is
    not at ``base_revision`` (if given), or, with ``refuse_pending``, has a
    pause still waiting for an answer.
    """

    session_id: str
    run_id: str
    now: datetime
    lease_until: datetime
    principal: str | None = None
    base_revision: int | None = None
    refuse_pending: bool = False
    # A takeover's: the turn it saw holding the session; another holder refuses it.
    seen_holder: str | None = None


@dataclass(frozen=True)
class TurnPublish:
    """A first turn's messages, to append at the revision it started from."""

    session_id: str
    base_revision: int
    messages: Sequence[MessageBody]
    run_id: str


class SessionStore(Protocol):
    """Sessions and their committed history, read at a revision."""

    async def create_session(self, session: SessionRecord) -> None: ...

    async def get_session(self, session_id: str) -> SessionRecord | None: ...

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]: ...


class RunStore(Protocol):
    """A first turn's hold on its session: marked, published, or ended."""

    async def begin_run(self, request: RunRequest) -> RunStart | None:
        """Mark a first turn running, in one conditional statement; ``None`` if refused.

        The caller reads which of `RunRequest`'s refusals it was. The
        history the turn runs on comes with the marker, read in the same
        transaction.
        """
        ...

    async def end_run(
        self, session_id: str, run_id: str, failure: FailedTurn | None = None
    ) -> None:
        """Clear this run's marker; with ``failure``, owe ``turn.failed`` in the same
        transaction (once, however often it is run)."""
        ...

    async def publish_turn(self, publish: TurnPublish) -> int:
        """Append a first turn at its base revision, ending its run; raises RevisionConflict."""
        ...


class RunRenewal(Protocol):
    """A live first turn keeping its session: its run marker's lease moved on.

    The marker's lease is what frees a session whose worker died mid-turn, so a
    turn that lives longer than one lease must renew it, or another turn (or a
    queued message) would run beside it.
    """

    async def renew_run(self, session_id: str, run_id: str, lease_until: datetime) -> bool:
        """Extend this run's marker to ``lease_until``, in one statement; ``False``
        if the session's marker is no longer this run's (it ended, or was taken)."""
        ...
