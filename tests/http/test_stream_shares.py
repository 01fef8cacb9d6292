"""One key cannot take the service with streams, against a real ``symfonic serve``.

A principal past its share of streams is refused with 429 ``too_many_streams``
and ``Retry-After``, while others still open theirs. And when one key's feeds
fill every connection the server accepts, a newcomer displaces that key's
oldest idle feed: other principals are still served, and a feed opened before
the flood by someone else stays open through it. A stream whose turn is
working never gives way.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import anyio
import httpx
import pytest
from anyio.abc import SocketStream

from agui_support import run_body
from serve_support import Server, serving
from symfonic.core.contracts.principal import Principal
from symfonic.server.transport.stream_shares import CONNECTION_EXTENSION, StreamShares

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

KEYS = "alice=alice-secret-key,bob=bob-secret-key,carol=carol-secret-key:approver"
ALICE = {"Authorization": "Bearer alice-secret-key"}
FEEDS = 1000
CAP = 100


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A small connection cap, and a stream cap high enough for one key to fill it."""
    workdir = tmp_path_factory.mktemp("crowded")
    with serving(
        f"sqlite:///{workdir / 'crowded.db'}", workdir / "server.log",
        "--max-connections", str(CAP), "--max-streams-per-principal", str(FEEDS),
        keys=KEYS,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The default stream cap, many connections."""
    workdir = tmp_path_factory.mktemp("shared")
    with serving(
        f"sqlite:///{workdir / 'shared.db'}", workdir / "server.log", keys=KEYS
    ) as running:
        yield running


async def _open_feed(port: int, key: str) -> tuple[SocketStream, bytes]:
    """A raw feed request; the stream and the response's head (empty if closed first)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    await stream.send(
        f"GET /v1/pauses/events HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    received = b""
    with anyio.fail_after(10):
        try:
            while b"\r\n\r\n" not in received:
                received += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            pass
    return stream, received


async def _still_open(stream: SocketStream) -> bool:
    """Whether the server has not closed ``stream`` (a quiet feed sends nothing)."""
    try:
        with anyio.move_on_after(0.2):
            while True:
                await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        return False
    return True


async def test_a_thousand_feeds_from_one_key_leave_room_for_everyone_else(
    crowded: Server,
) -> None:
    port = _port(crowded)
    alices_feed, head = await _open_feed(port, "alice-secret-key")
    assert head.startswith(b"HTTP/1.1 200 "), head
    bobs: list[SocketStream] = []
    refused = 0
    start = time.monotonic()
    for _ in range(FEEDS):
        stream, head = await _open_feed(port, "bob-secret-key")
        bobs.append(stream)
        refused += not head.startswith(b"HTTP/1.1 200 ")
    opened_in = time.monotonic() - start
    served = 0
    async with httpx.AsyncClient(base_url=crowded.url, timeout=5) as client:
        for _ in range(10):
            # A new client each time: a new connection, as a new visitor would make.
            async with httpx.AsyncClient(base_url=crowded.url, timeout=5) as visitor:
                response = await visitor.get("/v1/pauses", headers=ALICE)
            served += response.status_code == 200
        async with client.stream("GET", "/v1/pauses/events", headers=ALICE) as feed:
            first_line = await anext(feed.aiter_lines()) if feed.status_code == 200 else ""
    alive = [await _still_open(stream) for stream in bobs]
    alices_kept = await _still_open(alices_feed)
    for stream in [alices_feed, *bobs]:
        await stream.aclose()
    print(
        f"\n{FEEDS} feeds from bob in {opened_in:.1f} s; refused {refused}; alice served "
        f"{served} of 10; bob's feeds still open {sum(alive)}"
    )
    assert served == 10
    assert first_line == "event: pauses.snapshot"
    assert alices_kept, "another principal's feed gave way to bob's"
    # Bob's oldest feeds gave way to his newest, and to alice.
    assert sum(alive) <= CAP and not any(alive[: FEEDS - CAP])


async def test_past_its_share_a_principal_is_refused_and_others_still_stream(
    shared: Server,
) -> None:
    port = _port(shared)
    held = [await _open_feed(port, "bob-secret-key") for _ in range(16)]
    assert all(head.startswith(b"HTTP/1.1 200 ") for _, head in held)
    async with httpx.AsyncClient(base_url=shared.url, timeout=5) as client:
        refused = await client.get(
            "/v1/pauses/events", headers={"Authorization": "Bearer bob-secret-key"}
        )
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "5"
        error = json.loads(refused.text)["error"]
        assert error["code"] == "too_many_streams"
        assert "bob" in error["message"] and "16 open streams" in error["message"]
        # A turn's stream counts too, and is refused before anything runs.
        created = await client.post(
            "/v1/sessions", headers={"Authorization": "Bearer bob-secret-key"}
        )
        turn = await client.post(
            f"/v1/sessions/{created.json()['session_id']}/turns",
            json={"message": "hello"},
            headers={"Authorization": "Bearer bob-secret-key"},
        )
        assert turn.status_code == 429 and turn.json()["error"]["code"] == "too_many_streams"
        # So does an AG-UI run: one cap for every kind of stream.
        run = await client.post(
            "/v1/agui", json=run_body(uuid.uuid4().hex, "hello"),
            headers={"Authorization": "Bearer bob-secret-key"},
        )
        assert run.status_code == 429 and run.json()["error"]["code"] == "too_many_streams"
        assert run.headers["Retry-After"] == "5"
        async with client.stream("GET", "/v1/pauses/events", headers=ALICE) as feed:
            assert feed.status_code == 200
        # A feed that ends gives its place back.
        stream, _ = held.pop()
        await stream.aclose()
        with anyio.fail_after(5):
            while True:
                async with client.stream(
                    "GET", "/v1/pauses/events", headers={"Authorization": "Bearer bob-secret-key"}
                ) as again:
                    if again.status_code == 200:
                        break
                await anyio.sleep(0.05)
    for stream, _ in held:
        await stream.aclose()


class _Closed:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_heaviest_holders_oldest_idle_stream_gives_way_never_a_working_one() -> None:
    shares = StreamShares(per_principal=100)

    def opened(name: str, *, idle: bool) -> _Closed:
        connection = _Closed()
        scope = {"extensions": {CONNECTION_EXTENSION: connection}}
        shares.acquire(Principal(name), scope, idle=idle)
        return connection

    alices_feed = opened("alice", idle=True)
    turns = [opened("carol", idle=False) for _ in range(5)]  # the most, all working
    bobs_oldest, bobs_newest = opened("bob", idle=True), opened("bob", idle=True)
    opened("bob", idle=False)
    held, stream = shares.heaviest()
    assert held == 3 and stream is not None and stream.principal == "bob"
    before = shares.open_count
    stream.displace()
    assert bobs_oldest.closed and not bobs_newest.closed
    assert shares.open_count == before - 1
    assert not alices_feed.closed and not any(turn.closed for turn in turns)
