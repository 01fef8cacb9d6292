"""``symfonic demo``: pause in one process, resume in another, print the transcript.

The first child hands the pause token back over a pipe (never argv, never a log); each
next child, a fresh process that never saw the pause, resumes it from the store alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

import anyio

from symfonic.capabilities.human.interactions import approval_schema
from symfonic.capabilities.human.schema_problems import problems
from symfonic.cli.render import shown
from symfonic.cli.terminal import fill
from symfonic.core.contracts.errors import SymfonicError
from symfonic.core.contracts.pauses import PauseRecord
from symfonic.core.contracts.types import TurnResult
from symfonic.demo import demo_agent
from symfonic.storage import store_url

MESSAGE = "Pay alice 42 EUR for the design work"
# What the demo answers a question and a form with; --answer is the approval's.
SAMPLE_ANSWERS: dict[str, Any] = {
    "input": "30 EUR",
    "form": {"holder": "Dave Example", "iban": "DE02 1203 0000 0000 2020 51", "reference": "logo"},
}
# A turn of the demo agent pauses at most twice (a question or a form, then the approval).
MAX_PAUSES = 3
# What became of the turn once a pause was answered, by the pause's state.
AFTER_ANSWER = {"published": "the turn went on", "superseded": "the turn went on and asked again"}


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the offline pause-and-resume demo")
    p.add_argument("--store", help="store URL (default: SYMFONIC_STORE or sqlite:///symfonic.db)")
    p.add_argument(
        "--message",
        default=MESSAGE,
        help="what the user asks; 'Pay bob for the logo' asks a question first, "
        "'Pay dave 15 EUR' a form",
    )
    p.add_argument(
        "--answer",
        default='{"decision": "approve"}',
        help="the approver's answer as JSON, e.g. "
        '\'{"decision": "reject", "reason": "wrong IBAN"}\' '
        "(a question is answered '30 EUR', a form with sample bank details)",
    )
    p.add_argument("--step", choices=["pause", "resume"], help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def _say(who: str, text: str) -> None:
    print("\n".join(fill(text, 90, indent=22, first=f"  {who:<19} ")))


def _outcome(result: TurnResult) -> dict[str, Any]:
    """A turn's result as the parent reads it over the pipe."""
    data: dict[str, Any] = {
        "session_id": result.session_id,
        "status": result.status,
        "answer": result.answer,
        "revision": result.revision,
        "error": None if result.error is None else result.error.message,
    }
    if result.pause is not None:
        data.update(
            token=result.pause.token, query=result.pause.query, kind=result.pause.kind.value
        )
    return data


async def _pause_step(url: str, message: str) -> dict[str, Any]:
    async with demo_agent(url) as agent:
        return _outcome(await agent.run(message, principal="local"))


def _did_not_pause(paused: dict[str, Any]) -> int:
    """Say what the turn did instead of pausing; there is nothing to resume."""
    pid = paused["pid"]
    if paused["status"] == "failed":
        print(f"[process 1, pid {pid}] the turn failed: {paused['error']}")
        return 1
    print(f"[process 1, pid {pid}] the turn finished without pausing; the assistant answered:")
    print("\n".join(fill(shown(paused["answer"]), 90, indent=14)))
    print("[process 1] nothing it did needed approval, so there is nothing to resume.")
    print(f"            To see a pause, ask for a payment: --message {json.dumps(MESSAGE)}")
    return 0


async def _resume_step(url: str, token: str, answer: Any) -> dict[str, Any]:
    async with demo_agent(url) as agent:
        return _outcome(await agent.resume(token, answer, principal="local"))


def answer_words(pause: PauseRecord) -> str:
    """How the transcript gives ``pause``'s answer: a person who cancelled the question
    and one who refused it outright (an MCP server's form) both declined to answer,
    and neither gave an answer to show."""
    if pause.answer_status in ("cancelled", "declined"):
        return "declined to answer"
    return json.dumps(pause.answer)


async def _transcript(url: str, session_id: str) -> None:
    async with demo_agent(url) as agent:
        session = await agent.get_session(session_id)
        history = await agent.store.history(session_id, session.revision)
        audit = {p.tool_call_id: p for p in await agent.store.session_pauses(session_id)}
    print(f"\nTranscript of session {session_id} (revision {session.revision}), from the store:\n")
    for body in history:
        role = body["role"]
        if role == "human":
            _say(f"{session.principal} (user)", shown(body["content"]))
        elif role == "ai" and body.get("tool_calls"):
            for c in body["tool_calls"]:
                _say("assistant", f"calls {c['name']}({shown(c['args'])})")
                pause = audit.get(c["id"])
                if pause is not None:
                    _say(
                        "",
                        f"↳ paused: {pause.kind.value} asked of "
                        f"{pause.audience or pause.principal}",
                    )
                    if pause.answered_by is not None and pause.answered_at is not None:
                        given = answer_words(pause)
                        after = AFTER_ANSWER.get(pause.state.value, pause.state.value)
                        _say(
                            "",
                            f"↳ answered by {pause.answered_by} at "
                            f"{pause.answered_at:%H:%M:%S}: {given}; {after}",
                        )
        elif role == "ai":
            _say("assistant", shown(body["content"]))
        elif role == "tool":
            _say(f"tool {body.get('name') or ''}".strip(), shown(body["content"]))


def _child(step: str, url: str, stdin: str, extra: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "symfonic", "demo", "--step", step, "--store", url, *extra],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        left = "; the pause is still waiting, nothing was answered" if step == "resume" else ""
        raise SystemExit(f"symfonic demo: the {step} process failed: {out.stderr.strip()}{left}")
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def run(args: argparse.Namespace) -> int:
    url = store_url(args.store)
    try:
        answer = json.loads(args.answer)
    except ValueError:
        print(f"symfonic demo: --answer is not JSON: {args.answer}", file=sys.stderr)
        return 2
    wrong = [problem.words() for problem in problems(approval_schema({}), answer)]
    if wrong and args.step is None:
        print(
            f"symfonic demo: --answer is not an approval's answer: {'; '.join(wrong)}",
            file=sys.stderr,
        )
        return 2
    try:
        if args.step == "pause":
            data = anyio.run(_pause_step, url, args.message)
            print(json.dumps({**data, "pid": os.getpid()}))
            return 0
        if args.step == "resume":
            request = json.loads(sys.stdin.read())
            data = anyio.run(_resume_step, url, request["token"], request["answer"])
            print(json.dumps({**data, "pid": os.getpid()}))
            return 0
    except SymfonicError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"symfonic demo — store {url}, scripted model, no network\n")
    print(f"[process 1] the user asks: {json.dumps(args.message, ensure_ascii=False)}")
    paused = _child("pause", url, "", ["--message", args.message])
    if "token" not in paused:
        return _did_not_pause(paused)
    print(f"[process 1, pid {paused['pid']}] the turn paused {_WHY[paused['kind']]}. It asks:")
    print(f"              {paused['query']}")
    print("[process 1] exited. The pause and its checkpoint are in the store; nothing ran.\n")
    done = _answered(url, paused, answer)
    anyio.run(_transcript, url, paused["session_id"])
    return 0 if done["status"] == "complete" else 1


_WHY = {"approval": "before paying", "input": "to ask a question", "form": "to ask for a form"}


def _answered(url: str, paused: dict[str, Any], approval: Any) -> dict[str, Any]:
    """Each pause answered by a fresh process, until the turn stops pausing."""
    done = paused
    for number in range(2, MAX_PAUSES + 2):
        answer = approval if done["kind"] == "approval" else SAMPLE_ANSWERS[done["kind"]]
        print(
            f"[process {number}] a fresh process answers as principal 'local': {json.dumps(answer)}"
        )
        done = _child("resume", url, json.dumps({"token": done["token"], "answer": answer}), [])
        print(
            f"[process {number}, pid {done['pid']}] resumed from the store alone → {done['status']}"
            + (f": {done['error']}" if done["error"] else "")
        )
        if "token" not in done:
            break
        print(f"              and paused again {_WHY[done['kind']]}. It asks:")
        print(f"              {done['query']}\n")
    return done
