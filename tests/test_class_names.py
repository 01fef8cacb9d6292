"""No two classes in `src/symfonic` share a name, so a name in a traceback, a log or a
review points at one class."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import symfonic

SOURCES = Path(symfonic.__file__).parent

# Wire models the HTTP client and webhooks mirror from the server by hand, under the
# server's names; they go once each model is defined once, at the contracts layer.
MIRRORED = {
    "PauseAbandoned",
    "PauseChange",
    "PauseExpired",
    "PauseQuery",
    "PauseSnapshot",
}


def classes_by_name() -> dict[str, list[str]]:
    defined: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(SOURCES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined[node.name].append(str(path.relative_to(SOURCES)))
    return defined


def test_no_two_classes_in_src_share_a_name() -> None:
    defined = classes_by_name()
    assert len(defined) > 100  # the walk reads the package, not an empty tree
    shared = {name: where for name, where in defined.items() if len(where) > 1}
    assert {name: where for name, where in shared.items() if name not in MIRRORED} == {}
    # and the list shrinks as each mirror goes
    assert set(shared) >= MIRRORED, MIRRORED - set(shared)
