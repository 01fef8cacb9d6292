"""SQL statements written once with `:name` parameters, parsed on import into PostgreSQL's `$n`
form; whether one returns rows or a count is the caller's choice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

# A rewrite of our own: SQLAlchemy's compiler gives the same, but importing it costs every
# process about 0.4 s of CPU that a store otherwise never pays.
_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")

Params = Mapping[str, Any]


@dataclass(frozen=True)
class Statement:
    """One SQL statement with ``:name`` parameters."""

    text: str
    # The statement in PostgreSQL's positional form, and the names in that order.
    positional: str = field(init=False)
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        object.__setattr__(self, "positional", _PARAMETER.sub(number, self.text))
        object.__setattr__(self, "names", tuple(names))

    def values(self, params: Params) -> tuple[Any, ...]:
        """The parameters in positional order."""
        return tuple(params[name] for name in self.names)


class Dialect(Enum):
    """Which SQL a store speaks, where the two databases really differ."""

    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


class Row(Protocol):
    """A row as either driver hands it over: its columns by name."""

    def __getitem__(self, column: str, /) -> Any: ...


# PostgreSQL: the commit of the statement that starts with this does not wait for
# the disk (``set_config(…, true)`` is ``SET LOCAL``; a ``RETURNING`` that names
# ``UNSYNCED_COLUMN`` runs it inside the statement, before the commit).
UNSYNCED = "WITH unsynced AS (SELECT set_config('synchronous_commit', 'off', true) AS setting)"
UNSYNCED_COLUMN = "(SELECT setting FROM unsynced) AS unsynced"


def first(rows: Sequence[Row]) -> Row | None:
    return rows[0] if rows else None


_COMPACT = json.JSONEncoder(separators=(",", ":"))


def json_text(value: Any) -> str | None:
    """A JSON column's value as the text both drivers store (``None`` stays SQL NULL)."""
    return None if value is None else _COMPACT.encode(value)


def json_value(text: Any) -> Any:
    """A JSON column read back: both drivers hand it over as text."""
    return json.loads(text) if isinstance(text, str | bytes) else text
