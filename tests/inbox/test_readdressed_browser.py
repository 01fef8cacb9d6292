"""Escalation and reassignment in the inbox, in Chromium against ``symfonic serve``, on both stores.

What people rely on: a pause escalated to them appears without a reload, saying
from whom it came and after how long, and the audience before (which keeps it)
sees the same line appear; an operator reassigns a pause from its card, and it
leaves the first person's inbox with a word saying where it went and arrives in
the new audience's, saying who handed it over and why; a refused reassignment
is said in words, in place; a non-operator sees no Reassign button.

The screenshots (``/tmp/inbox-escalation-*.png``) show a card with its
escalation line and the Reassign form open, at desktop and phone width.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser_support import (
    ESCALATE_AFTER,
    Inbox,
    ask,
    bearer,
    postgres_database,
    serving_inbox,
)
from test_browser import LIVE, browser, card, expect_text, left, signed_in

pytestmark = pytest.mark.slow
__all__ = ["browser"]  # the fixture, used by name

KEYS = (
    "alice=alice-secret-key,carol=carol-secret-key:approvers,tom=tom-secret-key:team-leads,"
    "olga=olga-secret-key:operator+approvers"
)
AGENTS = ("inbox_agents:approvals", "inbox_agents:escalating")
# Sweeps often enough that a step due is applied well within LIVE of its time.
OPTIONS = ("--sweep-interval", "0.3")
SHOTS = Path("/tmp")


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Inbox]:
    workdir = tmp_path_factory.mktemp(f"readdressed-{request.param}")
    serve = {"keys": KEYS, "agents": AGENTS, "options": OPTIONS}
    if request.param == "sqlite":
        with serving_inbox(f"sqlite:///{workdir / 'symfonic.db'}", workdir, **serve) as inbox:
            yield inbox
        return
    with postgres_database() as url, serving_inbox(url, workdir, **serve) as inbox:
        yield inbox


def reassign_button(page_card: Any) -> Any:
    return page_card.get_by_role("button", name="Reassign", exact=True)


def test_an_escalated_pause_appears_live_for_the_new_audience_with_its_line(
    browser: Any, served: Inbox
) -> None:
    from playwright.sync_api import expect

    tom = signed_in(browser, served.url, "tom")
    carol = signed_in(browser, served.url, "carol")
    tom.wait_for_timeout(1_000)  # the feeds are open
    pause = ask(served.url, "pay uma 6", agent="escalating")
    expect(card(carol, pause)).to_be_visible(timeout=LIVE)
    expect(card(carol, pause).locator(".moved")).to_be_hidden()
    expect(card(tom, pause)).to_have_count(0)

    line = f"Escalated from approvers after {ESCALATE_AFTER} s"
    expect(card(tom, pause)).to_be_visible(timeout=ESCALATE_AFTER * 1000 + LIVE)
    expect_text(card(tom, pause).locator(".moved"), f"^{line}$")
    # The approvers keep it, and are told of the step on the card they have.
    expect_text(card(carol, pause).locator(".moved"), f"^{line}$", timeout=LIVE)
    # Neither is an operator: no Reassign button.
    for page in (tom, carol):
        expect(reassign_button(card(page, pause))).to_have_count(0)

    card(tom, pause).get_by_role("button", name="Approve").click()
    expect_text(left(tom, pause), "approved by you")
    expect_text(left(carol, pause), "approved by tom", timeout=LIVE)
    assert len(served.payments("uma")) == 1
    tom.context.close()
    carol.context.close()


def test_an_operator_reassigns_a_pause_from_one_inbox_to_another(
    browser: Any, served: Inbox
) -> None:
    from playwright.sync_api import expect

    pause = ask(served.url, "pay vera 7", agent="approvals")
    carol = signed_in(browser, served.url, "carol")
    tom = signed_in(browser, served.url, "tom")
    olga = signed_in(browser, served.url, "olga")
    expect(card(carol, pause)).to_be_visible()
    expect(reassign_button(card(carol, pause))).to_have_count(0)
    theirs = card(olga, pause)
    reassign_button(theirs).click()
    expect(reassign_button(theirs)).to_have_attribute("aria-expanded", "true")
    form = theirs.get_by_role("form", name=re.compile("^Reassign"))
    expect(form.get_by_label("New audience")).to_be_focused()

    # Checked on the page first, then by the service: each refusal in words, in place.
    form.get_by_role("button", name="Hand it over").click()
    expect_text(form.get_by_role("alert"), "Name the audience by its scope")
    expect(form.get_by_label("New audience")).to_have_attribute("aria-invalid", "true")

    def tamper(route: Any) -> None:
        body = json.loads(route.request.post_data)
        body["audience"] = "team leads"  # a space: not a scope
        route.continue_(post_data=json.dumps(body))

    olga.route(re.compile(r"/v1/pauses/[^/]+/reassign$"), tamper)
    form.get_by_label("New audience").fill("team-leads")
    form.get_by_label("Reason").fill("carol is on leave")
    form.get_by_role("button", name="Hand it over").click()
    expect_text(form.get_by_role("alert"), r"^The reassignment was not accepted: .*audience")
    expect(card(carol, pause)).to_be_visible()

    olga.unroute(re.compile(r"/v1/pauses/[^/]+/reassign$"))
    form.get_by_role("button", name="Hand it over").click()
    expect_text(left(olga, pause), "reassigned to team-leads by you$")
    expect_text(left(carol, pause), "reassigned to team-leads by olga$", timeout=LIVE)
    expect(card(carol, pause)).to_have_count(0)
    arrived = card(tom, pause)
    expect(arrived).to_be_visible(timeout=LIVE)
    expect_text(arrived.locator(".moved"), "^Reassigned from approvers by olga: carol is on leave$")

    arrived.get_by_role("button", name="Approve").click()
    expect_text(left(tom, pause), "The agent finished: .*sent 7 EUR to vera")
    assert len(served.payments("vera")) == 1
    for page in (carol, tom, olga):
        page.context.close()


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_screenshots_of_an_escalated_card_with_the_reassign_form(
    browser: Any, served: Inbox, width: int, height: int
) -> None:
    from playwright.sync_api import expect

    olga = signed_in(browser, served.url, "olga", viewport={"width": width, "height": height})
    pause = ask(served.url, "pay wanda 120", agent="escalating")
    shown = card(olga, pause)
    escalated = ESCALATE_AFTER * 1000 + LIVE
    expect_text(shown.locator(".moved"), "Escalated from approvers", timeout=escalated)
    reassign_button(shown).click()
    form = shown.get_by_role("form", name=re.compile("^Reassign"))
    form.get_by_label("New audience").fill("finance")
    form.get_by_label("Reason").fill("over the team leads' limit")
    shown.scroll_into_view_if_needed()
    name = "desktop" if width > 600 else "phone"
    olga.screenshot(path=str(SHOTS / f"inbox-escalation-{name}.png"), full_page=True)
    form.get_by_role("button", name="Cancel").click()
    expect(form).to_be_hidden()
    expect(reassign_button(shown)).to_be_focused()
    olga.context.close()
    # Declined, so the next width's page shows one card again.
    body = {"token": pause["pause"]["token"], "answer": None, "status": "cancelled"}
    declined = httpx.post(f"{served.url}/v1/resume", json=body, headers=bearer("olga"), timeout=30)
    assert declined.status_code == 200, declined.text
