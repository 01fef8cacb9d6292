"""The prose in ``src/`` fits on a card: module docstrings of at most five lines, no reST roles.

A module docstring states the invariant its module owns; the reasons belong in
docs/. Roles such as ``:class:`x``` are rendered by nothing here, so names are
written in plain backticks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_MODULE_DOCSTRING_LINES = 5
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
REST_ROLE = re.compile(r":(?:py:)?(?:mod|meth|class|func|data|attr|exc|obj|const|ref):`")


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if "/migrations/" in name:  # a migration's docstring records its change as shipped
            continue
        yield name, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _docstring_nodes(tree: ast.Module) -> Iterator[ast.Constant]:
    for node in ast.walk(tree):
        if isinstance(node, DOCUMENTED) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and _is_text(first.value):
                yield first.value


def _is_text(node: ast.expr) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def test_module_docstrings_are_at_most_five_lines() -> None:
    long = []
    for name, tree in _modules():
        first = next(iter(tree.body), None)
        if isinstance(first, ast.Expr) and _is_text(first.value):
            assert first.end_lineno is not None
            lines = first.end_lineno - first.lineno + 1
            if lines > MAX_MODULE_DOCSTRING_LINES:
                long.append(f"{name}: {lines} lines")
    assert not long, "module docstrings over five lines (say the rest in docs/):\n" + "\n".join(
        long
    )


def test_no_rest_roles_in_docstrings() -> None:
    found = [
        f"{name}:{node.lineno}: {match.group(0)}"
        for name, tree in _modules()
        for node in _docstring_nodes(tree)
        for match in REST_ROLE.finditer(str(node.value))
    ]
    assert not found, "reST roles in docstrings (write `name` in backticks):\n" + "\n".join(found)
