"""The client's parts that need no server: frames, refusals in any shape, where a key goes."""

from __future__ import annotations

import json

import httpx
import pytest

from http_support import free_port
from symfonic import BudgetRefused, PauseExpired, SymfonicError
from symfonic.client import ApiError, AsyncSymfonicClient, ServiceUnreachable, SymfonicClient
from symfonic.client.sse import Frame, FrameReader


def read(text: str) -> tuple[list[Frame], str | None]:
    reader = FrameReader()
    frames = [frame for line in text.split("\n") if (frame := reader.feed(line))]
    last = reader.end()
    return frames + ([last] if last else []), reader.last_id


def test_frames_are_read_as_the_sse_rules_say() -> None:
    text = (
        ": keep-alive\n\n"
        'id: 7\nevent: text.delta\ndata: {"text":\ndata:  "hi"}\n\n'
        "event: empty\n\n"
        'id: 9\nevent: response.complete\ndata:{"answer": "done"}'
    )
    frames, last_id = read(text)
    assert frames == [
        Frame("text.delta", {"text": "hi"}, "7"),
        Frame("response.complete", {"answer": "done"}, "9"),
    ]
    assert last_id == "9"


def answering(status: int, body: str, **headers: str) -> SymfonicClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text=body, headers=headers)

    return SymfonicClient("http://symfonic", transport=httpx.MockTransport(handler))


def refusal(status: int, code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}})


def test_a_refusal_is_the_python_apis_type_with_the_services_code_and_words() -> None:
    gone = refusal(410, "pause_expired", "the pause expired at 10:00")
    with answering(410, gone) as client, pytest.raises(PauseExpired) as expired:
        client.resume("sfp_token", {"decision": "approve"})
    assert isinstance(expired.value, ApiError) and isinstance(expired.value, SymfonicError)
    assert (expired.value.status, expired.value.message) == (410, "the pause expired at 10:00")

    over = refusal(429, "budget_refused", "over quota")
    client = answering(429, over, **{"Retry-After": "30"})
    with client, pytest.raises(BudgetRefused) as refused:
        client.resume("sfp_token", {"decision": "approve"})
    assert refused.value.retry_after == 30 and refused.value.fields == {"retry_after": 30}


def test_a_body_that_is_not_the_error_shape_is_still_one_api_error() -> None:
    page = "<html><body>502 Bad Gateway</body></html>"
    with answering(502, page) as client, pytest.raises(ApiError) as broken:
        client.health()
    assert (broken.value.status, broken.value.code) == (502, "http_error")
    assert "502 Bad Gateway" in broken.value.message


def test_the_key_and_the_token_travel_in_headers_and_bodies_never_in_a_url() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200, json={"status": "complete", "session_id": "s1", "revision": 1, "answer": "ok"}
        )

    transport = httpx.MockTransport(handler)
    with SymfonicClient("http://symfonic", api_key="k-123", transport=transport) as client:
        result = client.resume("sfp_secret-token", {"decision": "approve"})
        assert "k-123" not in repr(client)
    assert result.answer == "ok"
    [request] = sent
    assert request.headers["Authorization"] == "Bearer k-123"
    assert "sfp_secret-token" not in str(request.url)
    assert json.loads(request.content)["token"] == "sfp_secret-token"


@pytest.mark.anyio
async def test_no_service_at_the_url_is_the_clients_own_error_naming_the_url() -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there; no scheme is http://
    async with AsyncSymfonicClient(address) as client:
        with pytest.raises(ServiceUnreachable) as raised:
            await client.health()
        with pytest.raises(ServiceUnreachable):
            await anext(client.stream("hi", "s1"))
    assert raised.value.url == f"http://{address}"
    assert str(raised.value).startswith(f"cannot reach a symfonic service at http://{address}: ")
    with SymfonicClient(f"http://{address}") as blocking, pytest.raises(ServiceUnreachable):
        blocking.health()
