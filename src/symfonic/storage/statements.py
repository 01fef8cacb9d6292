"""SQL statements and units of work, written once and run by either driver.

A port method's transaction is a *unit of work*: a generator that yields the
queries it needs, one at a time, and receives each one's :class:`Result`. It
never touches a connection, so the same unit runs whole, without a pause, over
``sqlite3`` and step by step over ``asyncpg`` (one round trip per statement),
each driver at its native cost with no translation layer in between.

Statements are written once, with ``:name`` parameters, and parsed once when
the module defining them is imported: what PostgreSQL's ``$n`` form is and
whether the statement returns rows are decided there, not on every execution.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Statement:
    """One SQL statement with ``:name`` parameters."""

    text: str
    # The statement in PostgreSQL's positional form, and the names in that order.
    positional: str = field(init=False)
    names: tuple[str, ...] = field(init=False)
    # Whether it hands back rows (a SELECT, or anything with RETURNING).
    fetches: bool = field(init=False)

    def __post_init__(self) -> None:
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        object.__setattr__(self, "positional", _PARAMETER.sub(number, self.text))
        object.__setattr__(self, "names", tuple(names))
        words = self.text.upper().split()
        object.__setattr__(self, "fetches", words[0] == "SELECT" or "RETURNING" in words)

    def __call__(self, **params: Any) -> Query:
        return Query(self, params)

    def many(self, rows: Sequence[Mapping[str, Any]]) -> Query:
        """The statement once per parameter set, as one step (an ``executemany``)."""
        return Query(self, {}, rows)


@dataclass(frozen=True)
class Query:
    """A statement and its parameters: one step of a unit of work."""

    statement: Statement
    params: Mapping[str, Any]
    many: Sequence[Mapping[str, Any]] | None = None

    def positional(self, params: Mapping[str, Any] | None = None) -> tuple[Any, ...]:
        values = self.params if params is None else params
        return tuple(values[name] for name in self.statement.names)


class Row(Protocol):
    """A row as either driver hands it over: its columns by name."""

    def __getitem__(self, column: str, /) -> Any: ...


@dataclass(frozen=True)
class Result:
    """What one step produced: its rows (if it fetches) and how many rows it touched."""

    rows: Sequence[Row]
    rowcount: int

    def first(self) -> Row | None:
        return self.rows[0] if self.rows else None


Unit = Generator[Query, Result, T]
"""One transaction: yields queries, receives their results, returns the method's value."""


def one(query: Query) -> Unit[Result]:
    """A unit of a single statement; its result."""
    return (yield query)


_COMPACT = json.JSONEncoder(separators=(",", ":"))


def json_text(value: Any) -> str | None:
    """A JSON column's value as the text both drivers store (``None`` stays SQL NULL)."""
    return None if value is None else _COMPACT.encode(value)


def json_value(text: Any) -> Any:
    """A JSON column read back: both drivers hand it over as text."""
    return json.loads(text) if isinstance(text, str | bytes) else text
