"""Four eyes in the inbox, in Chromium against ``symfonic serve``, on both stores.

What people rely on: the person who asked sees the pause and where its vote
stands, but no Approve; the first approver's approval is counted in place (the
card stays, saying "1 of 2 approvals, by you", with no second Approve); the
next approver's card says who approved, live, and their approval runs the
payment once. An edit is a new proposal: the editor's card and the others'
(live) show the edited arguments, the question worded from them ("Pay 8 EUR
to vic") and only the editor's approval, the first
approver may approve again, and that approval pays the edited amount once.

The screenshots (``/tmp/inbox-quorum-*.png``) show a card with one of its two
approvals, at desktop and phone width.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import Inbox, ask, postgres_database, serving_inbox
from test_browser import LIVE, browser, card, expect_text, left, signed_in

pytestmark = pytest.mark.slow
__all__ = ["browser"]  # the fixture, used by name

KEYS = (
    "alice=alice-secret-key:approvers,carol=carol-secret-key:approvers,"
    "dave=dave-secret-key:approvers,erin=erin-secret-key:approvers"
)
AGENTS = ("inbox_agents:four_eyes",)
SHOTS = Path("/tmp")
PHONE = {"viewport": {"width": 390, "height": 844}}


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Inbox]:
    workdir = tmp_path_factory.mktemp(f"quorum-{request.param}")
    serve = {"keys": KEYS, "agents": AGENTS}
    if request.param == "sqlite":
        with serving_inbox(f"sqlite:///{workdir / 'symfonic.db'}", workdir, **serve) as inbox:
            yield inbox
        return
    with postgres_database() as url, serving_inbox(url, workdir, **serve) as inbox:
        yield inbox


def approve_button(page_card: Any) -> Any:
    return page_card.get_by_role("button", name="Approve", exact=True)


def test_the_requester_cannot_approve_one_approval_counts_and_the_second_pays_once(
    browser: Any, served: Inbox
) -> None:
    from playwright.sync_api import expect

    alice = signed_in(browser, served.url, "alice")
    carol = signed_in(browser, served.url, "carol")
    dave = signed_in(browser, served.url, "dave", **PHONE)
    dave.wait_for_timeout(1_000)  # the feeds are open
    pause = ask(served.url, "pay uma 6", agent="four_eyes")

    for page in (alice, carol, dave):
        expect(card(page, pause)).to_be_visible(timeout=LIVE)
        expect_text(card(page, pause).locator(".votes"), "^0 of 2 approvals$")
    expect(approve_button(card(alice, pause))).to_be_hidden()
    expect(card(alice, pause).get_by_role("button", name="Reject")).to_be_visible()

    approve_button(card(carol, pause)).click()
    expect_text(card(carol, pause).locator(".votes"), "^1 of 2 approvals, by you$")
    expect_text(card(carol, pause).locator(".outcome"), "Your approval is counted")
    expect(approve_button(card(carol, pause))).to_be_hidden()
    expect_text(card(dave, pause).locator(".votes"), "^1 of 2 approvals, by carol$", timeout=LIVE)
    assert served.payments("uma") == []
    carol.screenshot(path=str(SHOTS / "inbox-quorum-desktop.png"), full_page=True)
    dave.screenshot(path=str(SHOTS / "inbox-quorum-phone.png"), full_page=True)

    approve_button(card(dave, pause)).click()
    expect_text(left(dave, pause), "approved by you")
    expect_text(left(carol, pause), "approved by dave", timeout=LIVE)
    assert len(served.payments("uma")) == 1
    for page in (alice, carol, dave):
        page.context.close()


def amount_shown(page_card: Any) -> Any:
    return page_card.locator(".call dt", has_text="amount").locator(
        "xpath=following-sibling::dd[1]"
    )


def test_an_edit_resets_the_count_and_every_card_shows_the_edited_call(
    browser: Any, served: Inbox
) -> None:

    carol = signed_in(browser, served.url, "carol")
    erin = signed_in(browser, served.url, "erin", **PHONE)
    erin.wait_for_timeout(1_000)  # the feeds are open
    pause = ask(served.url, "pay vic 9", agent="four_eyes")
    for page in (carol, erin):
        expect_text(amount_shown(card(page, pause)), "^9$", timeout=LIVE)
        expect_text(card(page, pause).locator("h3"), "^Pay 9 EUR to vic$")

    approve_button(card(carol, pause)).click()
    expect_text(card(erin, pause).locator(".votes"), "^1 of 2 approvals, by carol$", timeout=LIVE)

    editing = card(erin, pause)
    editing.get_by_role("button", name="Edit").click()
    editing.get_by_label("Amount", exact=True).fill("8")
    editing.get_by_role("button", name="Approve with changes").click()
    expect_text(card(erin, pause).locator(".votes"), "^1 of 2 approvals, by you$")
    expect_text(amount_shown(card(erin, pause)), "^8$")
    expect_text(card(erin, pause).locator("h3"), "^Pay 8 EUR to vic$")
    # carol's approval was of 9: her card shows the new proposal, live, and asks her again.
    expect_text(card(carol, pause).locator(".votes"), "^1 of 2 approvals, by erin$", timeout=LIVE)
    expect_text(amount_shown(card(carol, pause)), "^8$")
    expect_text(card(carol, pause).locator("h3"), "^Pay 8 EUR to vic$")
    assert served.payments("vic") == []

    approve_button(card(carol, pause)).click()
    expect_text(left(carol, pause), "approved by you")
    assert [entry["amount"] for entry in served.payments("vic")] == [8]
    for page in (carol, erin):
        page.context.close()
