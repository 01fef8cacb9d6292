"""A paused turn's state, written to and read from the checkpoint port.

A checkpoint is data only, never committed history, so a pause costs the size of its
turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import BaseMessage

from symfonic.core.contracts.errors import InteractionConfigurationError
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import Ballot, CheckpointRecord, Claim, Store, VoteOutcome
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    InteractionKind,
    KernelResult,
    PendingInteraction,
)
from symfonic.core.messages import MessageBody, bodies_of
from symfonic.kernel.loop import Counters

FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)


@dataclass(frozen=True)
class TurnCheckpoint:
    """The recorded state of one paused turn, as read from the checkpoint port."""

    pause_id: str
    session_id: str
    base_revision: int
    messages: tuple[Mapping[str, Any], ...]
    counters: Counters
    interaction: PendingInteraction
    principal: Principal | None = None
    """Whose message the turn answers; ``None`` in checkpoints that did not record it."""


@dataclass(frozen=True)
class ResumeOutcome:
    """What a resume brings to the kernel: the recorded turn and the person's answer.

    ``response`` is the observation the answered call receives; for an approval
    it is the gated tool's output (or the rejection), computed before the turn is
    rebuilt.
    """

    turn: TurnCheckpoint | None
    response: Answer
    tool_call_id: str | None
    interrupt_id: str
    status: AnswerStatus = "resolved"


@dataclass(frozen=True)
class ClaimedTurn:
    """A won claim: the paused turn as recorded, and the committed history it continues."""

    turn: TurnCheckpoint | None
    history: list[MessageBody]


def _interaction_body(pending: PendingInteraction) -> dict[str, Any]:
    return {
        "kind": pending.kind.value,
        "tool_call_id": pending.tool_call_id,
        "tool_name": pending.tool_name,
        "args": pending.args,
        "query": pending.query,
        "response_schema": pending.response_schema,
        "audience": pending.audience,
        "sub_agent": pending.sub_agent,
        "delegated_pause_id": pending.delegated_pause_id,
        "args_digest": pending.args_digest,
        **({"continuation": pending.continuation} if pending.continuation is not None else {}),
        **({"server": pending.server} if pending.server is not None else {}),
        **({"edited_by": pending.edited_by} if pending.edited_by is not None else {}),
    }


def _interaction_of(body: Mapping[str, Any]) -> PendingInteraction:
    return PendingInteraction(
        kind=InteractionKind(body["kind"]),
        tool_call_id=body["tool_call_id"],
        tool_name=body["tool_name"],
        args=dict(body["args"]),
        query=body["query"],
        response_schema=dict(body["response_schema"]),
        audience=body.get("audience"),
        sub_agent=body.get("sub_agent"),
        delegated_pause_id=body.get("delegated_pause_id"),
        args_digest=body.get("args_digest"),
        continuation=body.get("continuation"),
        server=body.get("server"),
        edited_by=body.get("edited_by"),
    )


def proposed_call(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The call an edit proposed, as ``(tool_call_id, args)``, in a checkpoint's body;
    ``None`` when nobody edited it. The turn's messages keep the call the model made:
    a view of the pending pause shows what would run, which is this."""
    interaction = body.get("interaction")
    if not isinstance(interaction, Mapping) or interaction.get("edited_by") is None:
        return None
    args = interaction.get("args")
    if not isinstance(args, Mapping):
        return None
    return str(interaction.get("tool_call_id")), dict(args)


def with_proposed_call(
    messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """``messages`` (a checkpoint's) with the edited call's arguments in place of the
    model's, for a view of what would run; unchanged when nobody edited the call."""
    proposed = proposed_call(body)
    if proposed is None:
        return list(messages)
    call_id, args = proposed

    def shown(call: Any) -> Any:
        is_it = isinstance(call, Mapping) and call.get("id") == call_id
        return {**call, "args": args} if is_it else call

    return [
        {**m, "tool_calls": [shown(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m
        for m in messages
    ]


def principal_of(body: Mapping[str, Any] | None) -> Principal | None:
    """The principal a checkpoint's body records (``body["principal"]``), if any."""
    if body is None:
        return None
    return Principal(str(body["name"]), frozenset(str(s) for s in body.get("scopes", ())))


class TurnCheckpointStore:
    """Reads and writes turn state through the checkpoint port; nothing is cached."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @staticmethod
    def record_of(
        pause_id: str,
        session_id: str,
        base_revision: int,
        result: KernelResult,
        principal: Principal | None = None,
    ) -> CheckpointRecord:
        """The checkpoint row for a kernel result that stopped at an interaction.

        ``principal``: whose message the turn answers, kept so the resumed turn
        asks its approval rules with the same one, on whichever worker resumes.
        """
        if result.interaction is None:
            raise InteractionConfigurationError("only a paused turn has a checkpoint to record")
        messages: Sequence[BaseMessage] = result.messages
        body: dict[str, Any] = {
            "messages": bodies_of(messages),
            "rounds": result.rounds,
            "model_calls": result.model_calls,
            "tokens": result.tokens,
            "interaction": _interaction_body(result.interaction),
        }
        if principal is not None:
            body["principal"] = {"name": principal.name, "scopes": sorted(principal.scopes)}
        return CheckpointRecord(
            pause_id=pause_id,
            session_id=session_id,
            format_version=FORMAT_VERSION if result.interaction.continuation is not None else 1,
            base_revision=base_revision,
            body=body,
        )

    async def load(self, pause_id: str) -> TurnCheckpoint | None:
        """The turn recorded for ``pause_id``, read from the port on this call."""
        return self._turn_of(await self._store.load_checkpoint(pause_id))

    async def claim(self, claim: Claim) -> ClaimedTurn | None:
        """Claim the pause, and read its turn from the port in the claim's transaction.

        ``None`` when the claim lost. Reading the turn as the claim is won costs
        no round trip of its own, and it is still read from the port on this call.
        """
        claimed = await self._store.claim_pause(claim)
        if claimed is None:
            return None
        return ClaimedTurn(self._turn_of(claimed.checkpoint), claimed.history)

    async def vote(self, ballot: Ballot) -> VoteOutcome | ClaimedTurn | None:
        """One approval toward a quorum: the store's outcome when it did not claim, or
        the turn its claim won, read in the vote's transaction; ``None`` when the
        pause is no longer pending and unexpired."""
        voted = await self._store.vote_pause(ballot)
        if voted is None or voted.claimed is None:
            return voted
        return ClaimedTurn(self._turn_of(voted.claimed.checkpoint), voted.claimed.history)

    @staticmethod
    def proposed(
        record: CheckpointRecord, args: Mapping[str, Any], digest: str, editor: str, query: str
    ) -> CheckpointRecord:
        """``record`` with its call's arguments edited by ``editor``, and the question
        worded from them: the checkpoint of an edit that is a new proposal. The turn's
        messages keep the call as the model made it; the interaction is what a resume
        runs, so any worker that claims the pause later runs the edited call, and says
        it was edited."""
        interaction = {
            **record.body["interaction"],
            "args": dict(args),
            "args_digest": digest,
            "edited_by": editor,
            "query": query,
        }
        return replace(record, body={**record.body, "interaction": interaction})

    @staticmethod
    def _turn_of(record: CheckpointRecord | None) -> TurnCheckpoint | None:
        if record is None:
            return None
        if record.format_version not in READABLE_FORMATS:
            raise InteractionConfigurationError(
                f"checkpoint {record.pause_id} has format {record.format_version}, and this "
                f"version of symfonic reads formats up to {FORMAT_VERSION}"
            )
        body = record.body
        return TurnCheckpoint(
            pause_id=record.pause_id,
            session_id=record.session_id,
            base_revision=record.base_revision,
            messages=tuple(body["messages"]),
            counters=Counters(body["rounds"], body["model_calls"], body.get("tokens", 0)),
            interaction=_interaction_of(body["interaction"]),
            principal=principal_of(body.get("principal")),
        )
