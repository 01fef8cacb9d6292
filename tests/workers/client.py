"""Starting worker processes and talking to them, one JSON line each way.

A worker's stderr goes to a file, and a worker that does not answer in time, or
exits, fails the test with that file's tail, so a broken worker says why.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

WORKER = Path(__file__).with_name("worker.py")
REPLY_TIMEOUT = 60.0


class Worker:
    def __init__(self, process: Process, log: Path, name: str) -> None:
        self.process = process
        self.name = name
        self._log = log
        assert process.stdout is not None
        self._lines = BufferedByteReceiveStream(process.stdout)

    def _failure(self, why: str) -> AssertionError:
        tail = self._log.read_text()[-3000:] if self._log.exists() else ""
        return AssertionError(f"worker {self.name} {why}; its stderr ends:\n{tail}")

    async def send(self, op: str, **fields: Any) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps({"op": op, **fields}) + "\n").encode())

    async def receive(self, within: float = REPLY_TIMEOUT) -> dict[str, Any]:
        try:
            with anyio.fail_after(within):
                line = await self._lines.receive_until(b"\n", 1 << 24)
        except TimeoutError:
            raise self._failure(f"did not answer within {within:g}s") from None
        except (anyio.EndOfStream, anyio.IncompleteRead):
            raise self._failure("exited") from None
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def call(self, op: str, **fields: Any) -> dict[str, Any]:
        await self.send(op, **fields)
        return await self.receive()

    def kill(self) -> None:
        """``kill -9``: no cleanup, no rollback by the worker, no goodbye."""
        self.process.send_signal(signal.SIGKILL)


@asynccontextmanager
async def _spawned(
    url: str, logs: Path, name: str, env: Mapping[str, str] | None
) -> AsyncIterator[Worker]:
    log = logs / f"worker-{name}.log"
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, str(WORKER), url],
            stderr=stderr,
            env={**os.environ, **(env or {})},
        )
    async with process:
        spawned = Worker(process, log, name)
        try:
            yield spawned
        finally:
            if process.returncode is None:
                spawned.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()


@asynccontextmanager
async def workers(
    url: str, logs: Path, count: int, env: Mapping[str, str] | None = None
) -> AsyncIterator[list[Worker]]:
    """``count`` worker processes, started together and ready; killed on the way out."""
    async with AsyncExitStack() as stack:
        started = [
            await stack.enter_async_context(_spawned(url, logs, chr(ord("A") + i), env))
            for i in range(count)
        ]
        for each in started:
            if await each.receive() != {"ready": True}:
                raise each._failure("did not start")
        yield started
