"""Why an answer fails its JSON Schema, in words a person can act on, the same for every
transport.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from symfonic.core.contracts.types import Answer

_TYPES = {
    "number": "a number",
    "integer": "a whole number",
    "string": "text",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}
_BOUNDS = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}",
    "minLength": "at least {} characters long",
    "maxLength": "at most {} characters long",
    "minItems": "a list of at least {} items",
    "maxItems": "a list of at most {} items",
    "multipleOf": "a multiple of {}",
}
_DISCRIMINATING = {"const", "enum", "type"}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the answer: where (a path into it) and what, as a predicate."""

    path: tuple[str | int, ...]
    text: str

    def words(self, skip: int = 0) -> str:
        where = ".".join(str(p) for p in self.path[skip:]) or "the answer"
        return f"{where} {self.text}"


def problems(schema: dict[str, Any], answer: Answer) -> list[Problem]:
    """What is wrong with ``answer`` under ``schema``, most useful first; empty if valid."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(answer), key=lambda e: len(e.absolute_path))
    seen: dict[Problem, None] = {}
    for error in errors:
        for problem in _explain(error):
            seen.setdefault(problem, None)
    return list(seen)


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _either(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


def _explain(error: ValidationError) -> Iterator[Problem]:
    path = tuple(error.absolute_path)
    kind, expected = error.validator, error.validator_value
    if kind in ("oneOf", "anyOf") and error.context:
        yield from _branches(error, path)
    elif kind == "type":
        types = [expected] if isinstance(expected, str) else list(expected)
        yield Problem(path, f"must be {_either([_TYPES.get(t, t) for t in types])}")
    elif kind == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}
        for name in expected:
            if name not in instance:
                yield Problem((*path, name), "is required")
    elif kind == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        for name in error.instance:
            if name not in known:
                yield Problem((*path, name), "is not expected here")
    elif kind == "const":
        yield Problem(path, f"must be {_value(expected)}")
    elif kind == "enum":
        yield Problem(path, f"must be one of {_either([_value(v) for v in expected])}")
    elif kind in _BOUNDS:
        yield Problem(path, f"must be {_BOUNDS[kind].format(_value(expected))}")
    elif kind == "pattern":
        yield Problem(path, f"must match the pattern {expected}")
    elif kind == "format":
        yield Problem(path, f"must be a valid {expected}")
    elif kind == "uniqueItems":
        yield Problem(path, "must not repeat an item")
    elif kind in ("not", "False"):
        yield Problem(path, "is not allowed")
    else:
        yield Problem(path, f"does not fit the expected form ({kind})")


def _branches(error: ValidationError, path: tuple[str | int, ...]) -> Iterator[Problem]:
    by_branch: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        by_branch.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    branches = error.validator_value
    candidates = [
        errors
        for index, errors in by_branch.items()
        if not any(_misses_discriminator(e, path) for e in errors)
    ]
    # A branch with no errors would have matched; for oneOf that means two did.
    if len(by_branch) < len(branches) or not candidates:
        yield from _no_branch(error, path, by_branch)
        return
    best = min(candidates, key=len)
    for sub in sorted(best, key=lambda e: len(e.absolute_path)):
        yield from _explain(sub)


def _misses_discriminator(error: ValidationError, path: tuple[str | int, ...]) -> bool:
    depth = len(tuple(error.absolute_path)) - len(path)
    if error.validator == "type" and depth == 0:
        return True
    return error.validator in _DISCRIMINATING - {"type"} and depth == 1


def _no_branch(
    error: ValidationError,
    path: tuple[str | int, ...],
    by_branch: dict[int, list[ValidationError]],
) -> Iterator[Problem]:
    allowed: dict[tuple[str | int, ...], list[str]] = {}
    for errors in by_branch.values():
        for sub in errors:
            if sub.validator == "const" and _misses_discriminator(sub, path):
                allowed.setdefault(tuple(sub.absolute_path), []).append(_value(sub.validator_value))
            elif sub.validator == "type" and _misses_discriminator(sub, path):
                types = sub.validator_value
                for t in [types] if isinstance(types, str) else types:
                    allowed.setdefault(path, []).append(_TYPES.get(t, t))
    for where, values in allowed.items():
        unique = list(dict.fromkeys(values))
        verb = "must be" if where == path else "must be one of"
        yield Problem(where, f"{verb} {_either(unique)}")
    if not allowed:
        yield Problem(path, "matches none of the allowed forms")
