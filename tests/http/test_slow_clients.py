"""Slow clients against a real ``symfonic serve``: they lose their connections, others do not.

A client that trickles a request's headers (slow-loris) is cut off at the
header deadline with a 408, however steadily it trickles; one that sends
nothing is closed; a kept-alive connection's next request has the same deadline.
Past the connection cap a new connection displaces the one that has waited
longest for headers, so a normal client is served while the attack goes on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import httpx
import pytest
from anyio.abc import SocketStream

from serve_support import Server, serving
from symfonic.cli.main import main
from symfonic.cli.serve import fit_file_limit

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

HEADER_TIMEOUT = 1.5
# Generous: the machine may be busy; what matters is "closed", and "not before the deadline".
SLACK = 2.5
TRICKLE = 0.3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("slow-clients")
    with serving(
        f"sqlite:///{workdir / 'slow.db'}", workdir / "server.log",
        "--header-timeout", str(HEADER_TIMEOUT), "--max-connections", "40",
    ) as running:
        yield running


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with a small cap and a deadline far away: only the cap closes connections."""
    workdir = tmp_path_factory.mktemp("capped")
    with serving(
        f"sqlite:///{workdir / 'capped.db'}", workdir / "server.log",
        "--header-timeout", "60", "--max-connections", "8",
    ) as running:
        yield running


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


async def _trickle(stream: SocketStream, closed: list[tuple[float, bytes]], start: float) -> None:
    """Send a header line every TRICKLE seconds until the server closes; record when and what."""
    received = b""
    await stream.send(b"GET /v1/health HTTP/1.1\r\nHost: test\r\n")
    line = 0
    while True:
        with anyio.move_on_after(TRICKLE):
            try:
                received += await stream.receive()
                continue
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                closed.append((time.monotonic() - start, received))
                return
        line += 1
        try:
            await stream.send(f"X-Slow-{line}: x\r\n".encode())
        except (anyio.BrokenResourceError, ConnectionError):
            closed.append((time.monotonic() - start, received))
            return


async def _closed_after(stream: SocketStream, start: float) -> tuple[float, bytes]:
    received = b""
    try:
        while True:
            received += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        return time.monotonic() - start, received


async def test_trickled_headers_get_408_at_the_deadline_while_others_are_served(
    server: Server,
) -> None:
    closed: list[tuple[float, bytes]] = []
    served: list[int] = []
    silent: list[tuple[float, bytes]] = []
    start = time.monotonic()
    with anyio.fail_after(HEADER_TIMEOUT + SLACK + 5):
        async with anyio.create_task_group() as tasks:
            streams = [await anyio.connect_tcp("127.0.0.1", _port(server)) for _ in range(20)]
            for stream in streams:
                tasks.start_soon(_trickle, stream, closed, start)
            quiet = await anyio.connect_tcp("127.0.0.1", _port(server))

            async def wait_silent() -> None:
                silent.append(await _closed_after(quiet, start))

            tasks.start_soon(wait_silent)
            async with httpx.AsyncClient(base_url=server.url, timeout=5) as client:
                while time.monotonic() - start < HEADER_TIMEOUT:
                    served.append((await client.get("/v1/health")).status_code)
                    await anyio.sleep(0.1)
    for stream in [*streams, quiet]:
        await stream.aclose()
    assert served and set(served) == {200}
    assert len(closed) == 20
    for when, received in closed:
        assert HEADER_TIMEOUT - 0.1 <= when <= HEADER_TIMEOUT + SLACK, when
        assert received.startswith(b"HTTP/1.1 408 "), received
        assert b'"request_timeout"' in received
    # A connection that never sent a byte is just closed.
    [(when, received)] = silent
    assert received == b"" and when <= HEADER_TIMEOUT + SLACK


async def test_a_kept_alive_connections_next_request_has_the_same_deadline(
    server: Server,
) -> None:
    async with await anyio.connect_tcp("127.0.0.1", _port(server)) as stream:
        await stream.send(b"GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
        first = b""
        while b'"status":"ok"' not in first:
            first += await stream.receive()
        assert first.startswith(b"HTTP/1.1 200 ")
        closed: list[tuple[float, bytes]] = []
        start = time.monotonic()
        with anyio.fail_after(HEADER_TIMEOUT + SLACK + 5):
            await _trickle(stream, closed, start)
    [(when, received)] = closed
    assert when <= HEADER_TIMEOUT + SLACK
    assert received.startswith(b"HTTP/1.1 408 ")


async def test_past_the_cap_the_longest_waiting_connection_makes_room(capped: Server) -> None:
    start = time.monotonic()
    waiting = [await anyio.connect_tcp("127.0.0.1", _port(capped)) for _ in range(8)]
    for stream in waiting:
        await stream.send(b"GET /v1/health HTTP/1.1\r\n")
    closed: dict[int, tuple[float, bytes]] = {}
    first_closed = anyio.Event()

    async def watch(index: int, stream: SocketStream) -> None:
        closed[index] = await _closed_after(stream, start)
        first_closed.set()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            for index, stream in enumerate(waiting):
                tasks.start_soon(watch, index, stream)
            async with httpx.AsyncClient(base_url=capped.url, timeout=5) as client:
                response = await client.get("/v1/health")
                assert response.status_code == 200
            # The normal client took the place of the oldest; the rest stay open.
            with anyio.fail_after(5):
                await first_closed.wait()
            await anyio.sleep(0.3)  # room for a wrong second closure to show
            assert list(closed) == [0]
            tasks.cancel_scope.cancel()
    for stream in waiting:
        await stream.aclose()
    when, received = closed[0]
    assert received == b"" and when < 20


def test_the_cap_fits_the_file_limit() -> None:
    assert fit_file_limit(10) == 10
    assert 1 <= fit_file_limit(10**9) < 10**9


@pytest.mark.parametrize(
    "limit", [["--header-timeout", "0"], ["--header-timeout", "nan"], ["--max-connections", "0"]]
)
def test_limits_that_hold_nothing_are_refused(
    limit: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *limit])
    assert exited.value.code == 2
    assert f"argument {limit[0]}" in capsys.readouterr().err
