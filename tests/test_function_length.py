"""No function in ``src/`` is longer than 60 lines, so each one reads in one sitting.

A function's length runs from its ``def`` line to its last line (decorators not
counted; its docstring, comments and blank lines counted). A nested function is
measured on its own and also counts toward the function around it, so a factory
cannot hide a long body in the routes it defines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 60


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Each function under ``node``, by its qualified name, with its length in lines."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                assert child.end_lineno is not None
                yield name, child.end_lineno - child.lineno + 1
            yield from _functions(child, f"{name}.")
        else:
            yield from _functions(child, prefix)


def function_lengths() -> list[tuple[str, int]]:
    """Every function and method under ``src/``, as ``path qualified.name``, with its length.

    A list, not a mapping: a property's getter and setter share a name, and both count.
    """
    lengths: list[tuple[str, int]] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, length in _functions(tree):
            lengths.append((f"{path.relative_to(SRC.parent)} {name}", length))
    return lengths


def test_the_measure_reads_the_package_sources() -> None:
    lengths = function_lengths()
    assert "src/symfonic/kernel/loop.py Kernel.run" in dict(lengths)
    assert len(lengths) > 500


def test_no_function_in_src_is_longer_than_60_lines() -> None:
    too_long = [(where, n) for where, n in function_lengths() if n > MAX_LINES]
    assert too_long == [], f"over {MAX_LINES} lines: split each by the steps it takes"
