"""The statements that hand a session's history back, written once for both databases.

A turn runs on its session's committed history, so the two steps that start
one -- a first turn's run marker and a resumed turn's claim -- hand it over with
their row, read in the step's own transaction: no publish can come between
the step and the read. The history is aggregated by the database into one
text, the stored bodies joined by commas, so it is one value to decode, not a
row and a parse per message. The brackets that make that text one JSON array
are added here, where they cost one copy, not an SQL concatenation.

Where the read goes differs between the databases, and each adapter says which
it takes. On PostgreSQL the history is a correlated subquery in the step's
``RETURNING``: one statement, one round trip. SQLite makes all of an
``UPDATE``'s changes before it hands back the first ``RETURNING`` row, so it
keeps those rows aside until then, and a history among them is copied once
more than it is read, so SQLite reads the history as a second statement of the
step's transaction instead (docs/internals.md has the measurement).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from symfonic.core.contracts.types import InteractionKind
from symfonic.core.messages import MessageBody
from symfonic.storage.queries import BEGIN_RUN, CLAIM, own_claim
from symfonic.storage.statements import Statement

# SQL for "the bodies of session S up to revision R, oldest first, joined by
# commas, or NULL for none", given S and R as SQL expressions.
Aggregate = Callable[[str, str], str]


@dataclass(frozen=True)
class HistoryStatements:
    """One database's statements that start a turn, and read the history it runs on."""

    # The history alone, of ``:session_id`` up to ``:revision``, in a column ``bodies``.
    history: Statement
    # BEGIN_RUN; the history it starts is the session's at its revision.
    begin_run: Statement
    # CLAIM, and the owner's claim of ``n`` kinds by ``n``; the history they
    # continue is the pause's session's at the pause's base revision.
    claim: Statement
    own_claims: Mapping[int, Statement]
    # Whether those steps return the history in their row, in a column
    # ``history``; if not, ``history`` reads it after the step, in its transaction.
    in_the_step: bool


def returning_also(statement: Statement, columns: str) -> Statement:
    """``statement`` (which ends in a RETURNING list) returning ``columns`` too."""
    assert " RETURNING " in statement.text
    return Statement(f"{statement.text}, {columns}")


def history_in_the_step(aggregate: Aggregate) -> HistoryStatements:
    """Steps that return the history in their ``RETURNING`` row."""
    at_base = aggregate("symfonic_pauses.session_id", "symfonic_pauses.base_revision")
    at_session = aggregate("symfonic_sessions.session_id", "symfonic_sessions.revision")
    return HistoryStatements(
        history=_history_alone(aggregate),
        begin_run=returning_also(BEGIN_RUN, f"{at_session} AS history"),
        claim=returning_also(CLAIM, f"{at_base} AS history"),
        own_claims={
            kinds: returning_also(own_claim(kinds), f"{at_base} AS history")
            for kinds in _KIND_COUNTS
        },
        in_the_step=True,
    )


def history_after_the_step(aggregate: Aggregate) -> HistoryStatements:
    """Steps that return their row alone; the history is read after them."""
    return HistoryStatements(
        history=_history_alone(aggregate),
        begin_run=BEGIN_RUN,
        claim=CLAIM,
        own_claims={kinds: own_claim(kinds) for kinds in _KIND_COUNTS},
        in_the_step=False,
    )


_KIND_COUNTS = range(1, len(InteractionKind) + 1)


def _history_alone(aggregate: Aggregate) -> Statement:
    return Statement(f"SELECT {aggregate(':session_id', ':revision')} AS bodies")


def history_of(value: str | None) -> list[MessageBody]:
    """The bodies of a history column: JSON bodies joined by commas, or NULL for none."""
    if value is None:
        return []
    bodies: list[MessageBody] = json.loads(f"[{value}]")
    return bodies
