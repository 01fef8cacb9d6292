"""Pages the site generates at build time from the code, so they cannot drift from it.

A page asks for a generated part with a marker comment on a line of its own:
`<!-- generated: cli -->` (every command's `--help`), `<!-- generated: cli-flag-rows -->`
(a table row per option of every command, continuing the table above it) and `<!-- generated: http-api -->` (the
operations and schemas of `docs/openapi.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from symfonic.cli.main import parser

OPENAPI = Path(__file__).resolve().parent.parent / "openapi.json"
HELP_WIDTH = "80"


def commands(
    command: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and subcommand, depth first, as its words after `symfonic`."""
    command = command or parser()
    yield path, command
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def help_text(command: argparse.ArgumentParser) -> str:
    """What `--help` prints, at the width the reference and its test both use."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        return command.format_help()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def cli_reference() -> str:
    parts = []
    for path, command in commands():
        title = " ".join(("symfonic", *path))
        anchor = "-".join(("symfonic", *path))
        parts.append(f"## `{title}` {{#{anchor}}}\n\n```text\n{help_text(command).rstrip()}\n```\n")
    return "\n".join(parts)


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def cli_flag_rows() -> str:
    """A row per option of every command: setting, where, default, what it does."""
    rows = []
    for path, command in commands():
        if not path:
            continue
        for action in command._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            if isinstance(action, argparse._HelpAction):
                continue
            names = ", ".join(f"`{name}`" for name in action.option_strings)
            default = action.default
            shown = "" if default in (None, False, argparse.SUPPRESS) else f"`{default}`"
            help_line = (action.help or "") % {"default": default, "prog": command.prog}
            rows.append(f"| {names} | `symfonic {' '.join(path)}` | {shown} | {_cell(help_line)} |")
    return "\n".join(rows)


def _anchor(name: str) -> str:
    return "schema-" + name.lower()


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(option) for option in schema[key])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return "list of " + _type(schema.get("items", {}))
    if kind == "object" and "additionalProperties" in schema:
        values = schema["additionalProperties"]
        return "object" if values is True else "map of " + _type(values)
    return str(kind)


def _content(content: dict[str, Any]) -> str:
    shown = []
    for media, body in content.items():
        if "schema" in body:
            shown.append(f"{_type(body['schema'])} (`{media}`)")
        elif "itemSchema" in body:
            shown.append(f"a stream of events (`{media}`)")
        else:
            shown.append(f"`{media}`")
    return "; ".join(shown)


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    lines = [f"### `{method.upper()} {path}`\n", operation.get("summary", "") + "\n"]
    if operation.get("description"):
        lines.append(operation["description"].strip() + "\n")
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | what it is |", "| --- | --- | --- | --- |"]
        for parameter in parameters:
            required = " (required)" if parameter.get("required") else ""
            lines.append(
                f"| `{parameter['name']}`{required} | {parameter['in']} "
                f"| {_type(parameter.get('schema', {}))} "
                f"| {_cell(parameter.get('description'))} |"
            )
        lines.append("")
    body = operation.get("requestBody")
    if body:
        lines.append(f"Body: {_content(body.get('content', {}))}\n")
    lines += ["| status | what | body |", "| --- | --- | --- |"]
    for status, response in operation.get("responses", {}).items():
        lines.append(
            f"| {status} | {_cell(response.get('description'))} "
            f"| {_content(response.get('content', {}))} |"
        )
    return "\n".join(lines) + "\n"


def _schema(name: str, schema: dict[str, Any]) -> str:
    lines = [f"### {name} {{#{_anchor(name)}}}\n"]
    if schema.get("description"):
        lines.append(schema["description"].strip() + "\n")
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    if properties:
        lines += ["| field | type | what it is |", "| --- | --- | --- |"]
        for field, spec in properties.items():
            mark = " (required)" if field in required else ""
            lines.append(f"| `{field}`{mark} | {_type(spec)} | {_cell(spec.get('description'))} |")
    elif "enum" in schema or "anyOf" in schema or "oneOf" in schema:
        lines.append(f"One of: {_type(schema)}")
    return "\n".join(lines) + "\n"


def http_api() -> str:
    document = json.loads(OPENAPI.read_text())
    parts = ["## Operations\n"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            parts.append(_operation(method, path, operation))
    parts.append("## Schemas\n")
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        parts.append(_schema(name, schema))
    return "\n".join(parts)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "cli-flag-rows": cli_flag_rows,
    "http-api": http_api,
}
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda match: GENERATORS[match.group(1)](), markdown)
