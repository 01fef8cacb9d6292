"""The statements that hand a session's history back, written once for both databases.

A turn runs on its session's committed history, so the two steps that start
one -- a first turn's run marker and a resumed turn's claim -- return it with
their row: the history is a correlated subquery in the step's ``RETURNING``,
aggregated by the database into one text, the stored bodies joined by commas.
Each step is then one statement, which is one round trip on PostgreSQL and a
transaction without ``BEGIN`` and ``COMMIT`` on SQLite, and the history is one
value to decode, not a row and a parse per message. Only the aggregate differs
between the two databases, and each adapter passes its own; the brackets that
make the text one JSON array are added here, where they cost one copy, not an
SQL concatenation.
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
    """One database's statements that return a history (in a column ``history``)."""

    # The history alone, of ``:session_id`` up to ``:revision``, in a column ``bodies``.
    history: Statement
    # BEGIN_RUN, with the history at the session's revision.
    begin_run: Statement
    # CLAIM, and the owner's claim of ``n`` kinds by ``n``, with the history at
    # the pause's base revision.
    claim: Statement
    own_claims: Mapping[int, Statement]


def returning_also(statement: Statement, columns: str) -> Statement:
    """``statement`` (which ends in a RETURNING list) returning ``columns`` too."""
    assert " RETURNING " in statement.text
    return Statement(f"{statement.text}, {columns}")


def history_statements(aggregate: Aggregate) -> HistoryStatements:
    at_base = aggregate("symfonic_pauses.session_id", "symfonic_pauses.base_revision")
    at_session = aggregate("symfonic_sessions.session_id", "symfonic_sessions.revision")
    return HistoryStatements(
        history=Statement(f"SELECT {aggregate(':session_id', ':revision')} AS bodies"),
        begin_run=returning_also(BEGIN_RUN, f"{at_session} AS history"),
        claim=returning_also(CLAIM, f"{at_base} AS history"),
        own_claims={
            kinds: returning_also(own_claim(kinds), f"{at_base} AS history")
            for kinds in range(1, len(InteractionKind) + 1)
        },
    )


def history_of(value: str | None) -> list[MessageBody]:
    """The bodies of a history column: JSON bodies joined by commas, or NULL for none."""
    if value is None:
        return []
    bodies: list[MessageBody] = json.loads(f"[{value}]")
    return bodies
