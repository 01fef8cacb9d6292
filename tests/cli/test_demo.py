"""``symfonic demo`` as the README's first command runs it: the installed script,
the embedded default store, and the three ways the demo agent pauses.

Each pause is answered by a fresh process that never saw it; a question or a
form is followed by the approval, answered by one more process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from symfonic.cli.demo import answer_words
from symfonic.core.contracts.pauses import PauseRecord
from symfonic.core.contracts.types import InteractionKind, PauseState

T = datetime(2026, 12, 7, tzinfo=UTC)
SYMFONIC = Path(sys.executable).with_name("symfonic")


def demo(workdir: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "SYMFONIC_STORE"}
    out = subprocess.run(
        [str(SYMFONIC), "demo", *args],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=180, check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout


def processes(out: str) -> set[str]:
    return set(re.findall(r"\[process \d+, pid (\d+)\]", out))


def test_the_readme_demo_pays_alice_after_a_fresh_process_approves(tmp_path: Path) -> None:
    out = demo(tmp_path)
    assert "store sqlite:///symfonic.db" in out and (tmp_path / "symfonic.db").exists()
    assert "the turn paused before paying. It asks:" in out
    assert "[process 2, pid" in out and "resumed from the store alone → complete" in out
    assert re.search(r"Done\. payment pay_\w+ sent: 42 EUR to\s+DE89", out), out
    assert len(processes(out)) == 2


@pytest.mark.parametrize(
    ("message", "first", "asked", "given"),
    [
        ("Pay bob for the logo", "to ask a question", "How much should I pay Bob?",
         r"30 EUR to\s+FR14"),
        ("Pay dave 15 EUR", "to ask for a form", "Dave is not among your contacts",
         r"15 EUR to\s+DE02 1203"),
    ],
)
def test_a_question_or_a_form_comes_before_the_approval_each_answered_by_a_fresh_process(
    tmp_path: Path, message: str, first: str, asked: str, given: str
) -> None:
    out = demo(tmp_path, "--message", message)
    assert f"the turn paused {first}. It asks:\n              {asked}" in out
    again = "resumed from the store alone → paused\n              and paused again before paying"
    assert again in out
    assert "[process 3, pid" in out and "resumed from the store alone → complete" in out
    assert len(processes(out)) == 3
    assert re.search(rf"Done\. payment pay_\w+ sent: {given}", out), out


@pytest.mark.parametrize(
    ("status", "answer", "words"),
    [
        ("declined", None, "declined to answer"),  # an MCP server's form, refused outright
        ("cancelled", None, "declined to answer"),
        ("resolved", {"iban": "DE02"}, '{"iban": "DE02"}'),
    ],
)
def test_the_transcript_says_a_refused_or_cancelled_pause_was_declined(
    status: str, answer: object, words: str
) -> None:
    pause = PauseRecord(
        pause_id="p1", session_id="s1", principal="ann", agent="assistant", audience=None,
        kind=InteractionKind.FORM, query="your IBAN?", response_schema={"type": "object"},
        tool_call_id="call_1", interrupt_id="int_1", base_revision=0,
        state=PauseState.PUBLISHED, created_at=T, expires_at=T,
        server="bank", answered_by="ann", answer_status=status, answer=answer,
    )
    assert answer_words(pause) == words
