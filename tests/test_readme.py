"""The README as a user reads it: its example runs, and its configuration reference is whole.

The example is executed as written, with its scripted model, and again with a
model that fails (at once, and only once the person has answered), which is
what a provider that is down looks like: each outcome is reported, none crashes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage

from http_support import free_port
from symfonic.cli.main import main
from symfonic.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _example() -> str:
    [code] = re.findall(r"```python\n(.*?)```", _section("Define an agent"), re.DOTALL)
    return str(code)


def _run_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example's store is ./symfonic.db
    monkeypatch.delenv("SYMFONIC_STORE", raising=False)
    exec(compile(_example(), "README.md", "exec"), {"__name__": "readme_example"})


def test_the_readme_example_pauses_then_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_example(tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == [
        "paused: Approve send_payment?",
        "complete: Paid bob 5.",
    ]


@pytest.mark.parametrize(
    ("fails", "expected"),
    [
        (lambda messages: True, ["failed:"]),
        (
            lambda messages: any(isinstance(m, ToolMessage) for m in messages),
            ["paused:", "failed:"],
        ),
    ],
    ids=["at-once", "on-resume"],
)
def test_the_readme_example_reports_a_failed_turn_instead_of_crashing(
    fails: Any,
    expected: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original = ScriptedChatModel.from_script

    def from_script(script: Any) -> ScriptedChatModel:
        scripted = original(script)

        def respond(messages: list[BaseMessage]) -> Any:
            if fails(messages):
                raise ConnectionError("the provider is out of reach")
            return scripted.respond(messages)

        return ScriptedChatModel(respond=respond)

    monkeypatch.setattr(ScriptedChatModel, "from_script", from_script)
    _run_example(tmp_path, monkeypatch)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == expected
    assert lines[-1].startswith("failed: model_error ")
    assert "the provider is out of reach" in lines[-1]


def _environment_variables_read_in_src() -> set[str]:
    pattern = re.compile(
        r"""(?:environ\.get|environ\.setdefault|getenv)\(\s*["']([A-Z][A-Z0-9_]+)["']"""
        r"""|environ\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]"""
    )
    found: set[str] = set()
    for path in (ROOT / "src").rglob("*.py"):
        for match in pattern.finditer(path.read_text()):
            found.add(match.group(1) or match.group(2))
    return found


def test_every_environment_variable_src_reads_is_in_the_configuration_reference() -> None:
    variables = _environment_variables_read_in_src()
    assert {"SYMFONIC_STORE", "SYMFONIC_API_KEYS", "SYMFONIC_API_KEY"} <= variables
    reference = _section("Configuration")
    missing = sorted(name for name in variables if f"| `{name}` |" not in reference)
    assert not missing, f"README's Configuration table lacks {missing}"


def test_every_serve_option_is_in_the_configuration_reference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", capsys.readouterr().out))
    options.discard("--help")
    assert {"--store", "--host", "--port"} <= options
    reference = _section("Configuration")
    missing = sorted(option for option in options if f"| `{option}` |" not in reference)
    assert not missing, f"README's serve options table lacks {missing}"


@pytest.mark.slow
@pytest.mark.postgres
def test_the_several_workers_example_resumes_through_another_worker(postgres_url: str) -> None:
    """The README's shell block, run as written but on a fresh database and free ports."""
    [block] = re.findall(r"```bash\n(.*?)```", _section("Several workers"), re.DOTALL)
    script = "\n".join(line for line in block.splitlines() if not line.startswith("createdb"))
    script = script.replace("postgresql://postgres@127.0.0.1:5432/symfonic", postgres_url)
    script = script.replace(".venv/bin/symfonic", f"{sys.executable} -m symfonic")
    for port in ("8001", "8002", "8003", "8004"):
        script = script.replace(port, str(free_port()))
    assert "8001" not in script and "/symfonic\n" not in script
    done = subprocess.run(
        ["bash", "-c", "set -eu\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n" + script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SYMFONIC_STORE": "", "SYMFONIC_API_KEYS": ""},
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["status"] == "complete"
    assert outcome["answer"].startswith("Done. payment")


def _refusal_table() -> dict[str, int]:
    """Each code the README's refusal table names, with the status it is listed under."""
    listed: dict[str, int] = {}
    for status, codes in re.findall(r"^\| (\d{3}) \| ([^|]+) \|", README, re.MULTILINE):
        for code in re.findall(r"`([a-z_]+)`", codes):
            listed[code] = int(status)
    return listed


def test_every_refusal_the_service_makes_is_in_the_readme_table_with_its_status() -> None:
    from starlette.exceptions import HTTPException

    from symfonic.agent.fastapi import app, auth  # noqa: F401  (every route's errors)
    from symfonic.agent.http import errors, json_body
    from symfonic.cli import connections
    from symfonic.core.contracts.errors import RequestError, StoreUnavailable

    def subclasses(cls: type[RequestError]) -> list[type[RequestError]]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    def answered(response: Any) -> tuple[str, int]:
        return json.loads(response.body)["error"]["code"], response.status_code

    made = {cls.code: cls.status for cls in subclasses(RequestError)}
    made[auth.Unauthenticated.code] = 401
    made[StoreUnavailable.code] = StoreUnavailable.status
    made.update({code: status for status, code in errors._CODES.items()})
    made.update(json_body.REFUSALS)
    made.update([answered(errors._http(None, HTTPException(status))) for status in (404, 405)])  # type: ignore[arg-type]
    made.update([answered(errors._unexpected(None, RuntimeError("the test's own")))])  # type: ignore[arg-type]
    for refusal in (connections.TOO_SLOW, connections.TOO_MANY):
        head, _, body = refusal.partition(b"\r\n\r\n")
        made[json.loads(body)["error"]["code"]] = int(head.split()[1])
    listed = _refusal_table()
    assert {code: listed.get(code) for code in made} == made
    # and the table names nothing the service never sends
    assert set(listed) == set(made), set(listed) - set(made)


def test_the_delegation_example_pauses_once_then_completes_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [code] = re.findall(r"```python\n(.*?)```", _section("Agents that delegate"), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SYMFONIC_STORE", raising=False)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_delegation"})
    assert capsys.readouterr().out.splitlines() == [
        "paused: Approve charge? (asked by billing)",
        "complete: Done: billing says Ann was charged 5.",
    ]


def test_the_mcp_example_gates_a_server_tool_and_answers_its_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, agent = re.findall(
        r"```python\n(.*?)```", _section("Tools from MCP servers"), re.DOTALL
    )
    (tmp_path / "bank_server.py").write_text(server)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SYMFONIC_STORE", raising=False)
    exec(compile(agent, "README.md", "exec"), {"__name__": "readme_mcp_example"})
    assert capsys.readouterr().out.splitlines() == [
        "paused: Approve transfer_funds?",
        "complete: Done: pay bob 5.",
        "paused: What is ann's IBAN?",
        "complete: Done: add ann.",
    ]


def test_the_readmes_four_eyes_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    start = README.index("\n#### Approval policies: four eyes\n")
    [code] = re.findall(
        r"```py\n(.*?)```", README[start : README.index("\n#### ", start + 1)], re.DOTALL
    )
    monkeypatch.chdir(tmp_path)  # the example's store is ./four-eyes.db
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_four_eyes"})
    assert capsys.readouterr().out.splitlines() == [
        "refused: alice asked for this call and may not approve it; "
        "someone else of its audience must",
        "paused ['carol']",
        "complete Paid bob 5000.",
    ]
