"""The README and the manual as a user reads them: their examples run as written, and
their references are whole.

Each page's example is executed as written, with its scripted model; the first
agent's also with a model that fails (at once, and only once the person has
answered), which is what a provider that is down looks like: each outcome is
reported, none crashes. The CLI reference the site generates is what `--help` says.
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

import symfonic.testing
from http_support import free_port
from symfonic.cli.main import main
from symfonic.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text()


def _section(text: str, title: str) -> str:
    """The part of a page under its `## title` heading."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(text: str, language: str = "python") -> list[str]:
    return [str(code) for code in re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)]


def _exec(code: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples' stores are files in the current directory
    monkeypatch.delenv("SYMFONIC_STORE", raising=False)
    exec(compile(code, where, "exec"), {"__name__": "docs_example"})


def test_the_readmes_agent_prints_what_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [code] = _blocks(_section(README, "An agent"))
    [shown] = _blocks(_section(README, "An agent"), "text")
    _exec(code, "README.md", tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == shown.splitlines()
    # the model reads the reject: nothing claims the payment was made
    assert "Paid" not in shown.splitlines()[-1]


def test_the_readme_fits_on_a_few_screens() -> None:
    assert len(README.splitlines()) <= 250


FIRST_AGENT = "getting-started/first-agent.md"


def _first_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [code] = _blocks(page(FIRST_AGENT))
    _exec(code, FIRST_AGENT, tmp_path, monkeypatch)


def test_the_first_agent_pauses_then_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _first_agent(tmp_path, monkeypatch)
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
def test_the_first_agent_reports_a_failed_turn_instead_of_crashing(
    fails: Any,
    expected: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def failing_model(respond: Any) -> ScriptedChatModel:
        def failing(messages: list[BaseMessage]) -> Any:
            if fails(messages):
                raise ConnectionError("the provider is out of reach")
            return respond(messages)

        return ScriptedChatModel(respond=failing)

    monkeypatch.setattr(symfonic.testing, "ScriptedChatModel", failing_model)
    _first_agent(tmp_path, monkeypatch)
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
    reference = page("reference/configuration.md")
    missing = sorted(name for name in variables if f"| `{name}` |" not in reference)
    assert not missing, f"the configuration reference lacks {missing}"


def test_every_serve_option_is_in_the_configuration_reference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", capsys.readouterr().out))
    options.discard("--help")
    assert {"--store", "--host", "--port"} <= options
    reference = page("reference/configuration.md")
    missing = sorted(option for option in options if f"| `{option}` |" not in reference)
    assert not missing, f"the configuration reference's serve options lack {missing}"


@pytest.mark.slow
@pytest.mark.postgres
def test_the_several_workers_example_resumes_through_another_worker(postgres_url: str) -> None:
    """The guide's shell block, run as written but on a fresh database and free ports."""
    [block] = _blocks(page("guides/workers.md"), "bash")
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
    """Each code the error reference's refusal table names, with its status."""
    listed: dict[str, int] = {}
    errors = page("reference/errors.md")
    for status, codes in re.findall(r"^\| (\d{3}) \| ([^|]+) \|", errors, re.MULTILINE):
        for code in re.findall(r"`([a-z_]+)`", codes):
            listed[code] = int(status)
    return listed


def test_every_refusal_the_service_makes_is_in_the_error_reference_with_its_status() -> None:
    from starlette.exceptions import HTTPException

    from symfonic.cli import connections
    from symfonic.core.contracts.errors import RequestError, StoreUnavailable
    from symfonic.server import app  # noqa: F401  (every route's errors)
    from symfonic.server.http import auth  # noqa: F401
    from symfonic.server.transport import errors, json_body

    def subclasses(cls: type[RequestError]) -> list[type[RequestError]]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    def answered(response: Any) -> tuple[str, int]:
        return json.loads(response.body)["error"]["code"], response.status_code

    made = {cls.code: cls.status for cls in subclasses(RequestError)}
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
    [code] = _blocks(page("guides/delegation.md"))
    _exec(code, "guides/delegation.md", tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == [
        "paused: Approve charge? (asked by billing)",
        "complete: Done: billing says Ann was charged 5.",
    ]


def test_the_mcp_example_gates_a_server_tool_and_answers_its_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, agent = _blocks(page("guides/mcp.md"))
    (tmp_path / "bank_server.py").write_text(server)
    _exec(agent, "guides/mcp.md", tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == [
        "paused: Approve transfer_funds?",
        "complete: Done: pay bob 5.",
        "paused: What is ann's IBAN?",
        "complete: Done: add ann.",
    ]


def test_the_four_eyes_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [code] = _blocks(_section(page("guides/approvals.md"), "Approval policies: four eyes"), "py")
    _exec(code, "guides/approvals.md", tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == [
        "refused: alice asked for this call and may not approve it; "
        "someone else of its audience must",
        "paused ['carol']",
        "complete Paid bob 5000.",
    ]


def test_the_forms_example_asks_a_form_then_a_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [code] = _blocks(page("guides/forms.md"))
    _exec(code, "guides/forms.md", tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == [
        "form What are dave's bank details?",
        "input Which currency?",
        "complete Added dave.",
    ]


def _help(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_the_cli_reference_is_what_help_says_for_every_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The site's CLI page, generated when the site is built, against `--help` itself."""
    monkeypatch.syspath_prepend(str(DOCS / "hooks"))
    import generated

    reference = generated.cli_reference()
    monkeypatch.setenv("COLUMNS", generated.HELP_WIDTH)
    paths = [path for path, _ in generated.commands()]
    listed = re.findall(r"^    ([a-z]+) {2,}", _help(capsys), re.MULTILINE)
    assert {path[0] for path in paths if path} == set(listed)
    assert len(paths) > len(listed) + 1  # the subcommands' own subcommands too
    for path in paths:
        assert f"```text\n{_help(capsys, *path).rstrip()}\n```" in reference, " ".join(path)


# Each page under getting-started/ and guides/ whose Python a test here (or the
# client's, in tests/client) runs; serving.md's block is a module to write, not to run.
RUN_AS_WRITTEN = {
    "getting-started/first-agent.md",
    "guides/client.md",
    "guides/delegation.md",
    "guides/forms.md",
    "guides/mcp.md",
}


def test_every_python_example_in_the_tutorial_and_guides_is_run() -> None:
    with_python = {
        str(path.relative_to(DOCS))
        for part in ("getting-started", "guides")
        for path in (DOCS / part).glob("*.md")
        if _blocks(path.read_text())
    }
    assert with_python - RUN_AS_WRITTEN == {"getting-started/serving.md"}


def test_every_file_the_readme_links_to_exists() -> None:
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    assert "docs/inbox.png" in targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, missing
