"""A symfonic worker process driven by JSON lines on stdin, one reply line each.

Run as ``python worker.py STORE_URL``; it prints ``{"ready": true}`` once
imported, and opens its agent (store, pool, migrations, secret) only when told
to, so a test can start several workers and open them at the same moment.
Commands: ``open``, ``pause``, ``resume``, ``start_resume`` (in the background:
it answers with the run's id once the claim is won), ``race``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from typing import Any

import anyio
import anyio.abc

from agents import worker_agent  # type: ignore[import-not-found]
from symfonic import SymfonicAgent, SymfonicError
from symfonic.core.contracts.types import TurnResult


def outcome(result: TurnResult) -> dict[str, Any]:
    error = None if result.error is None else result.error.code
    token = None if result.pause is None else result.pause.token
    return {
        "status": result.status, "answer": result.answer, "revision": result.revision,
        "session_id": result.session_id, "error": error, "token": token,
    }


async def resume(agent: SymfonicAgent, token: str, answer: Any) -> dict[str, Any]:
    try:
        return outcome(await agent.resume(token, answer))
    except SymfonicError as refused:
        return {"status": "refused", "error": refused.code}


async def racing(agent: SymfonicAgent, token: str, answers: list[str]) -> list[dict[str, Any]]:
    """One resume per answer, all at once, on one token."""
    results: list[dict[str, Any]] = []

    async def one(answer: str) -> None:
        results.append(await resume(agent, token, answer))

    async with anyio.create_task_group() as group:
        for answer in answers:
            group.start_soon(one, answer)
    return results


async def race(agent: SymfonicAgent, tokens: list[str], racers: int, tag: str) -> dict[str, Any]:
    """For each token in turn, ``racers`` concurrent resumes, each with its own answer."""
    won: dict[int, str] = {}
    refused: Counter[str] = Counter()
    for index, token in enumerate(tokens):
        answers = [f"{tag}-{index}-{i}" for i in range(racers)]
        for result in await racing(agent, token, answers):
            if result["status"] == "complete":
                assert index not in won, f"token {index} won twice in one worker"
                won[index] = result["answer"]
            else:
                refused[f"{result['status']}:{result['error']}"] += 1
    return {"won": won, "refused": dict(refused)}


async def handle(
    agent: SymfonicAgent, command: dict[str, Any], tasks: anyio.abc.TaskGroup
) -> dict[str, Any]:
    op = command["op"]
    if op == "start_resume":
        run = await agent.start_resume(command["token"], command["answer"], tasks=tasks)
        return {"run_id": run.run_id}
    if op == "open":
        await agent.open()
        secret = await agent.store.signing_secret()
        return {"secret": hashlib.sha256(secret).hexdigest()}
    if op == "pause":
        return {"results": [outcome(await agent.run(text)) for text in command["texts"]]}
    if op == "resume":
        return await resume(agent, command["token"], command["answer"])
    if op == "race":
        return await race(agent, command["tokens"], command["racers"], command["tag"])
    raise ValueError(f"unknown op {op!r}")


async def main(url: str) -> None:
    lease = float(os.environ.get("SYMFONIC_TEST_CLAIM_LEASE", "120"))
    stdin = anyio.wrap_file(sys.stdin)

    def say(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    agent = worker_agent(url, claim_lease=lease)
    try:
        say({"ready": True})
        async with anyio.create_task_group() as tasks:
            while line := await stdin.readline():
                say(await handle(agent, json.loads(line), tasks))
    finally:
        await agent.aclose()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
