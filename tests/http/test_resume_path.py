"""How many of symfonic's modules one approving `POST /v1/resume` enters, the tool run and
the scripted model included: a ceiling that may only fall (docs/internals.md has the target)."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import pytest

from http_support import APPROVE, JSON, served_pause

pytestmark = pytest.mark.anyio

# Measured on this tree (50, or 51 when the store's run-event watch polls during the request);
# lower it when a change takes modules off the path.
CEILING = 51


async def test_an_approving_resume_enters_few_of_symfonics_modules(sqlite_url: str) -> None:
    entered: set[str] = set()

    def profile(frame: FrameType, event: str, _: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event == "call" and module.startswith("symfonic."):
            entered.add(module)

    async with served_pause(sqlite_url) as served:
        body = {"token": served.paused["token"], "answer": APPROVE}
        sys.setprofile(profile)
        try:
            response = await served.client.post("/v1/resume", json=body, headers=JSON)
        finally:
            sys.setprofile(None)
    assert response.status_code == 200, response.text
    assert response.json()["answer"] == "Paid."  # the tool ran and the turn completed
    assert {"symfonic.server.http.routes_resume", "symfonic.turns.resume"} <= entered
    assert len(entered) <= CEILING, sorted(entered)
