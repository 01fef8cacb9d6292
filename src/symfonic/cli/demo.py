"""``symfonic demo``: pause in one process, resume in another, print the transcript.

The parent process only orchestrates. The first child runs a turn until it
pauses for approval and hands the pause token back over a pipe (never argv,
never a log); the second child, a fresh process that never saw the pause,
resumes it from the store alone. Then the transcript is read back from the
store and printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import anyio

from symfonic.core.contracts.errors import SymfonicError
from symfonic.demo import demo_agent
from symfonic.storage import store_url

MESSAGE = "Pay alice 42 EUR for the design work"


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the offline pause-and-resume demo")
    p.add_argument("--store", help="store URL (default: SYMFONIC_STORE or sqlite:///symfonic.db)")
    p.add_argument("--message", default=MESSAGE, help="what the user asks")
    p.add_argument(
        "--answer",
        default='{"decision": "approve"}',
        help="the approver's answer as JSON, e.g. "
        '\'{"decision": "reject", "reason": "wrong IBAN"}\'',
    )
    p.add_argument("--step", choices=["pause", "resume"], help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def _say(who: str, text: str) -> None:
    body = textwrap.indent(textwrap.fill(text, 68), " " * 22).lstrip()
    print(f"  {who:<19} {body}")


async def _pause_step(url: str, message: str) -> dict[str, Any]:
    async with demo_agent(url) as agent:
        result = await agent.run(message, principal="local")
        if result.pause is None:
            raise SystemExit(f"the turn did not pause: {result.status} {result.error}")
        return {
            "session_id": result.session_id,
            "token": result.pause.token,
            "query": result.pause.query,
        }


async def _resume_step(url: str, token: str, answer: Any) -> dict[str, Any]:
    async with demo_agent(url) as agent:
        result = await agent.resume(token, answer, principal="local")
        return {
            "status": result.status,
            "answer": result.answer,
            "revision": result.revision,
            "error": None if result.error is None else result.error.message,
        }


async def _transcript(url: str, session_id: str) -> None:
    async with demo_agent(url) as agent:
        session = await agent.get_session(session_id)
        history = await agent.store.history(session_id, session.revision)
        audit = {p.tool_call_id: p for p in await agent.store.session_pauses(session_id)}
    print(f"\nTranscript of session {session_id} (revision {session.revision}), from the store:\n")
    for body in history:
        role = body["role"]
        if role == "human":
            _say(f"{session.principal} (user)", str(body["content"]))
        elif role == "ai" and body.get("tool_calls"):
            for c in body["tool_calls"]:
                _say("assistant", f"calls {c['name']}({json.dumps(c['args'])})")
                pause = audit.get(c["id"])
                if pause is not None:
                    _say(
                        "",
                        f"↳ paused: {pause.kind.value} asked of "
                        f"{pause.audience or pause.principal}",
                    )
                    if pause.answered_by is not None and pause.answered_at is not None:
                        _say(
                            "",
                            f"↳ answered by {pause.answered_by} at "
                            f"{pause.answered_at:%H:%M:%S}: {json.dumps(pause.answer)} "
                            f"({pause.state.value})",
                        )
        elif role == "ai":
            _say("assistant", str(body["content"]))
        elif role == "tool":
            _say(f"tool {body.get('name') or ''}".strip(), str(body["content"]))


def _child(step: str, url: str, stdin: str, extra: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "symfonic", "demo", "--step", step, "--store", url, *extra],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"the {step} process failed:\n{out.stderr.strip()}")
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def run(args: argparse.Namespace) -> int:
    url = store_url(args.store)
    try:
        answer = json.loads(args.answer)
    except ValueError:
        print(f"--answer is not JSON: {args.answer!r}", file=sys.stderr)
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
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"symfonic demo — store {url}, scripted model, no network\n")
    print(f"[process 1] the user asks: {args.message!r}")
    paused = _child("pause", url, "", ["--message", args.message])
    print(f"[process 1, pid {paused['pid']}] the turn paused before paying. It asks:")
    print(f"              {paused['query']}")
    print("[process 1] exited. The pause and its checkpoint are in the store; nothing ran.\n")
    print(f"[process 2] a fresh process answers as principal 'local': {json.dumps(answer)}")
    done = _child("resume", url, json.dumps({"token": paused["token"], "answer": answer}), [])
    print(
        f"[process 2, pid {done['pid']}] resumed from the store alone → {done['status']}"
        + (f": {done['error']}" if done["error"] else "")
    )
    anyio.run(_transcript, url, paused["session_id"])
    return 0 if done["status"] == "complete" else 1
