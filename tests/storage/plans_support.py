"""Recording the statements a store runs, and asking the database how it would run them.

A plan *scans the pending pauses* when it reads ``symfonic_pauses`` whole, or
through an index by nothing narrower than a ``state`` that may be ``pending``
(with at most a lower bound on a time): its cost then grows with every pause
that waits. The rows of ``claimed`` alone are the resumes in flight, however
many wait. A plan that names a pause, a session, a principal, an audience, or
reads only the pauses due (an upper bound on ``expires_at``, ``lease_until``
or ``escalate_at``) costs what it returns. On PostgreSQL a sort straight over a
scan of a principal's or a scope's pauses counts as wide too: it reads the
whole range (every pending pause of a scope) to keep one page.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from symfonic.storage.audit_log import register_audit_hash
from symfonic.storage.sqlite_file import path_of
from symfonic.storage.sqlite_statements import bound as _bound
from symfonic.storage.statements import Params, Row, Statement
from symfonic.storage.transactions import Connection, SqlTransactions

TABLE = "symfonic_pauses"
# What narrows a read of pauses to the rows it needs, as each database prints it.
_NARROW = re.compile(
    r"\b(pause_id|session_id|principal|audience)\s*(=|IN\b)"
    r"|\b(expires_at|lease_until|escalate_at)\s*<"
)

Recorded = dict[str, tuple[Statement, Params]]


class _Recording:
    """A connection that notes each statement (once per text) before running it."""

    def __init__(self, connection: Connection, seen: Recorded) -> None:
        self._connection, self._seen = connection, seen

    async def rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        self._seen.setdefault(statement.text, (statement, params))
        return await self._connection.rows(statement, params)

    async def count(self, statement: Statement, params: Params) -> int:
        self._seen.setdefault(statement.text, (statement, params))
        return await self._connection.count(statement, params)

    async def each(self, statement: Statement, params: Sequence[Params]) -> None:
        if params:
            self._seen.setdefault(statement.text, (statement, params[0]))
        await self._connection.each(statement, params)


def record_statements(store: SqlTransactions) -> Recorded:
    """Every statement ``store`` runs from now on, by its text, with its first parameters."""
    seen: Recorded = {}
    transaction, statement = store._run_transaction, store._run_statement

    def recording(body: Callable[[Connection], Awaitable[Any]]) -> Any:
        return lambda connection: body(_Recording(connection, seen))

    async def run_transaction(body: Any) -> Any:
        return await transaction(recording(body))

    async def run_statement(body: Any, *, write: bool) -> Any:
        return await statement(recording(body), write=write)

    store._run_transaction = run_transaction  # type: ignore[method-assign]
    store._run_statement = run_statement  # type: ignore[method-assign]
    return seen


def _scans_pending(access: str, states: str) -> bool:
    """Whether an index read by ``access`` may cover every pending pause.

    ``states``: the text naming which states it reads (SQLite prints ``state=?``).
    """
    if _NARROW.search(access.replace('"', "")):
        return False
    return "pending" in states or ":state" in states


def sqlite_plan(url: str, statement: Statement, params: Params) -> list[str]:
    """The steps of SQLite's plan for ``statement``, in words (``EXPLAIN QUERY PLAN``)."""
    connection = sqlite3.connect(path_of(url))
    register_audit_hash(connection)  # a pause's change plans the audit trigger's steps too
    try:
        plan = connection.execute(f"EXPLAIN QUERY PLAN {statement.text}", _bound(params))
        return [str(row[3]) for row in plan.fetchall()]
    finally:
        connection.close()


def sqlite_scans(url: str, statement: Statement, params: Params) -> list[str]:
    """The steps of SQLite's plan that read the pauses table wide."""
    details = sqlite_plan(url, statement, params)
    return [detail for detail in details if _sqlite_wide(detail, statement.text)]


def _sqlite_wide(detail: str, text: str) -> bool:
    # "SCAN p", "SCAN symfonic_pauses USING INDEX …": every row (or index entry).
    on_pauses = re.match(r"(SCAN|SEARCH) (symfonic_pauses|p)\b", detail)
    if on_pauses is None:
        return False
    if on_pauses.group(1) == "SCAN":
        return True
    return _scans_pending(detail.partition("(")[2], text)


async def postgres_plan(url: str, statement: Statement, params: Params) -> list[dict[str, Any]]:
    """Every node of PostgreSQL's plan for ``statement`` (``EXPLAIN (FORMAT JSON)``)."""
    import asyncpg

    connection = await asyncpg.connect("postgresql://" + url.partition("://")[2])
    try:
        text = await connection.fetchval(
            f"EXPLAIN (FORMAT JSON) {statement.positional}", *statement.values(params)
        )
    finally:
        await connection.close()
    (root,) = json.loads(text)
    return list(plan_nodes(root["Plan"]))


async def postgres_scans(url: str, statement: Statement, params: Params) -> list[str]:
    """The nodes of PostgreSQL's plan that read the pauses table wide."""
    nodes = await postgres_plan(url, statement, params)
    wide = [_describe(node) for node in nodes if _postgres_wide(node)]
    return wide + [
        f"Sort of {_describe(node['Plans'][0])}" for node in nodes if _sorts_a_range(node)
    ]


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A plan node and every node beneath it."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def _sorts_a_range(node: dict[str, Any]) -> bool:
    """A sort straight over a scan of a principal's or a scope's pauses: the whole
    range read to keep a page (a session's few pauses may be sorted)."""
    if node["Node Type"] != "Sort":
        return False
    scans = [child for child in node.get("Plans", []) if child.get("Relation Name") == TABLE]
    conditions = " ".join(str(n.get("Index Cond", "")) for scan in scans for n in plan_nodes(scan))
    return bool(re.search(r"\b(principal|audience)\b", conditions))


def _postgres_wide(node: dict[str, Any]) -> bool:
    index = str(node.get("Index Name", ""))
    on_pauses = node.get("Relation Name") == TABLE or index.startswith(
        ("ix_symfonic_pauses", "symfonic_pauses_pkey")
    )
    kind = str(node["Node Type"])
    # An update, a lock, a bitmap heap scan: each handles what a scan below it found.
    if not on_pauses or "Scan" not in kind or kind == "Bitmap Heap Scan":
        return False
    if kind == "Seq Scan":
        return True
    condition = re.sub(r"::[\w ]+|[()]", "", str(node.get("Index Cond", "")))
    return _scans_pending(condition, condition if "state" in condition else "pending")


def _describe(node: dict[str, Any]) -> str:
    where = node.get("Index Cond") or node.get("Filter") or ""
    return f"{node['Node Type']} {node.get('Index Name', TABLE)} {where}".strip()
