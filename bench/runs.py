"""What runs that outlive their connection cost (docs/runs.md), on each store:
1. **Background against attached**: interleaved blocks of turns (a tool call, an answer),
   attached (SSE to the end) or background (the 202, then its events to the end): the
   median over pairs of blocks of their latency and server CPU ratios.
2. **Rows kept** for a 2,000-token answer streamed at ``--rate`` tokens a second.
3. **Another worker's listener**: runs started on worker A, followed on worker B; a
   tool returns the time it ended, B times its ``tool.result``'s arrival.
Options and the command: bench/README.md. The figures go in docs/runs.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
from langchain_core.messages import BaseMessage, ToolMessage

from bench.http_bench import process_cpu_seconds, serving
from bench.matrix import ROOT
from bench.stats import percentile
from bench.stores import fresh_store
from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, call, current_turn, reply

AGENT = "bench.runs:agent"
OPTIONS = {"blocks": 10, "turns": 20, "tokens": 2000, "rate": 100.0, "runs": 30, "ticks": 7}


class PacedModel(ScriptedChatModel):
    """Streams the answer to ``long N R`` at R words a second, as a model does."""

    async def _astream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        asked = str(current_turn(messages)[0].content).split()
        async for chunk in super()._astream(messages, *args, **kwargs):
            yield chunk
            await anyio.sleep(1 / float(asked[2]) if asked[0] == "long" else 0)


def _respond(messages: list[BaseMessage]) -> Any:
    """``tick N``: N tool calls, one after another, then "done"; ``long N R``: N words."""
    verb, count, *_ = str((turn := current_turn(messages))[0].content).split()
    if verb == "long":
        return reply(" ".join(["token"] * int(count)))
    done = sum(isinstance(m, ToolMessage) for m in turn) == int(count)
    return reply("done") if done else call("tick", {"wait": 0.02 if int(count) > 1 else 0})


async def tick(wait: float) -> str:
    """The time this tool ended, after ``wait`` seconds (so a listener is live before it)."""
    await anyio.sleep(wait)
    return f"{time.time():.6f}"


def agent() -> SymfonicAgent:
    return SymfonicAgent(name="runs", model=PacedModel(respond=_respond), tools=[tick])


async def _turn(client: httpx.AsyncClient, message: str, background: bool) -> list[str]:
    """One turn on a new session, to its end; the lines of its event stream."""
    session = (await client.post("/v1/sessions", json={})).json()["session_id"]
    body = {"message": message, "background": background}
    turn = await client.post(f"/v1/sessions/{session}/turns", json=body)  # SSE by default
    if not background:
        return turn.text.splitlines()
    return (await client.get(turn.json()["events_url"])).text.splitlines()


async def cost(url: str, pid: int, blocks: int, turns: int) -> dict[str, Any]:
    """Medians over pairs of blocks of background ÷ attached: latency and server CPU."""
    latency, cpu = list[float](), list[float]()
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        await _turn(client, "tick 1", False)
        for block in range(blocks):
            pair: dict[bool, tuple[float, float]] = {}  # background? -> (median s, CPU s)
            for background in (block % 2 == 1, block % 2 == 0):  # who goes first alternates
                spent, times = process_cpu_seconds(pid), []
                for _ in range(turns):
                    started = time.perf_counter()
                    await _turn(client, "tick 1", background)
                    times.append(time.perf_counter() - started)
                pair[background] = statistics.median(times), process_cpu_seconds(pid) - spent
            latency.append(pair[True][0] / pair[False][0])
            cpu.append(pair[True][1] / max(pair[False][1], 0.01))
    return {"latency ratio": statistics.median(latency), "range": (min(latency), max(latency)),
            "cpu ratio": statistics.median(cpu), "last attached ms": pair[False][0] * 1000}


async def rows(url: str, message: str) -> dict[str, int]:
    """The rows one background run kept, and how many of them hold text."""
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        seen = await _turn(client, message, True)
    return {"rows": sum(x[:4] == "id: " for x in seen), "text": seen.count("event: text.delta")}


async def across(a: str, b: str, runs: int, ticks: int) -> dict[str, float]:
    """Runs started on ``a``, followed on ``b``: each tool result's time to reach ``b``."""
    waits: list[float] = []
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(runs):
            session = (await client.post(f"{a}/v1/sessions", json={})).json()["session_id"]
            body = {"message": f"tick {ticks}", "background": True}
            run = (await client.post(f"{a}/v1/sessions/{session}/turns", json=body)).json()
            async with client.stream("GET", b + run["events_url"]) as events:
                kind, arrived = "", []  # the current frame's event; each result's wait
                async for line in events.aiter_lines():
                    kind = line[7:] if line.startswith("event: ") else kind
                    if kind == "tool.result" and line.startswith("data: "):
                        arrived.append(time.time() - float(json.loads(line[6:])["content"]))
            waits += arrived[1:]  # a run's first may have been replayed, not followed
    return {"samples": len(waits), **{f"p{q} ms": percentile(waits, q) * 1000 for q in (50, 99)}}


def measure(store: str, folder: Path, options: argparse.Namespace) -> dict[str, Any]:
    """The three figures on a fresh store of ``store``'s kind, served by workers A and B."""
    name = f"bench_runs_{uuid.uuid4().hex[:8]}"
    with fresh_store(store, folder, name) as url, ExitStack() as servers:
        a, b = (servers.enter_context(serving(url, folder / f"{name}-{w}.log", flags=[AGENT]))
                for w in "ab")
        assert a.pid is not None  # a server this process started
        figures: dict[str, Any] = {"load": os.getloadavg()}
        figures["cost"] = anyio.run(cost, a.url, a.pid, options.blocks, options.turns)
        figures["across"] = anyio.run(across, a.url, b.url, options.runs, options.ticks)
        figures["rows"] = anyio.run(rows, a.url, f"long {options.tokens} {options.rate}")
        return {**figures, "load after": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--store", action="append", help="sqlite or a postgresql:// URL")
    for name, default in OPTIONS.items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "runs.json")
    options = parser.parse_args()
    stores = []
    with tempfile.TemporaryDirectory() as folder:
        for store in options.store or ["sqlite"]:
            figures = {"store": store.split("@")[-1], **measure(store, Path(folder), options)}
            print(json.dumps(figures, indent=1), flush=True)
            stores.append(figures)
    # What the report's section reads (bench/report/runs.py).
    command = " ".join(["python -m bench.runs", *sys.argv[1:]])
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps({"command": command, "date": date, "stores": stores}))


if __name__ == "__main__":
    main()
