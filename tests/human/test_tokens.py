"""Pause tokens: unforgeable, bound to one pause, shared by every worker of a database.

A token is the pause id and an HMAC of it under the database's secret: any
worker of that database verifies it, no one else can make one, and it never
shows up in a repr or a log line.
"""

from __future__ import annotations

import logging
import secrets

import pytest

from http_support import respellings
from symfonic import SymfonicAgent
from symfonic.capabilities.human.tokens import PREFIX, TokenSigner, new_pause_id
from symfonic.storage import open_store
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

SECRET = secrets.token_bytes(32)


def test_a_minted_token_verifies_to_its_pause() -> None:
    signer = TokenSigner(SECRET)
    pause_id = new_pause_id()
    token = signer.mint(pause_id)
    assert token.startswith(PREFIX)
    assert signer.verify(token) == pause_id
    assert signer.mint(pause_id) == token  # deterministic: the identical replay reuses it
    assert signer.verify(signer.mint(new_pause_id())) != pause_id


def test_another_secret_cannot_forge_or_verify() -> None:
    pause_id = new_pause_id()
    token = TokenSigner(SECRET).mint(pause_id)
    assert TokenSigner(secrets.token_bytes(32)).verify(token) is None


def test_every_altered_character_is_refused() -> None:
    signer = TokenSigner(SECRET)
    token = signer.mint(new_pause_id())
    body = token[len(PREFIX) :]
    for i, char in enumerate(body):
        replacement = "A" if char != "A" else "B"
        altered = PREFIX + body[:i] + replacement + body[i + 1 :]
        assert signer.verify(altered) is None, i
    assert signer.verify(token + "A") is None
    assert signer.verify(token[:-1]) is None


def test_only_the_minted_spelling_verifies() -> None:
    signer = TokenSigner(SECRET)
    # One with a '-' or '_' in it, so the standard alphabet's '+' and '/' get tried too.
    token = next(t for t in iter(lambda: signer.mint(new_pause_id()), "") if {"-", "_"} & set(t))
    assert signer.verify(token) is not None
    for spelling in respellings(token):
        assert signer.verify(spelling) is None, repr(spelling)


@pytest.mark.parametrize("token", [None, 1, b"sfp_x", "", "sfp_", "sfp_!!!", "sfp_" + "A" * 200])
def test_garbage_does_not_verify(token: object) -> None:
    assert TokenSigner(SECRET).verify(token) is None


def test_the_secret_has_at_least_128_bits_and_is_never_shown() -> None:
    with pytest.raises(ValueError):
        TokenSigner(b"short")
    signer = TokenSigner(SECRET)
    assert SECRET.hex() not in repr(signer) and "***" in repr(signer)


async def test_workers_of_one_database_share_the_secret(store_url: str) -> None:
    async with open_store(store_url) as one, open_store(store_url) as two:
        assert await one.signing_secret() == await two.signing_secret()
        assert len(await one.signing_secret()) >= 16


async def test_another_database_has_another_secret(sqlite_url: str) -> None:
    other = sqlite_url.replace("symfonic.db", "other.db")
    async with open_store(sqlite_url) as one, open_store(other) as two:
        assert await one.signing_secret() != await two.signing_secret()


async def test_tokens_stay_out_of_reprs_and_logs(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel.from_script([call("ask_human", {"question": "?"}), reply("ok")])
    caplog.set_level(logging.DEBUG)
    async with SymfonicAgent(model=model, store=sqlite_url) as agent:
        paused = await agent.run("hi")
        assert paused.pause is not None
        token = paused.pause.token
        assert token not in repr(paused.pause)
        assert token not in repr(paused)
        await agent.resume(token, "yes")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert token not in logged
