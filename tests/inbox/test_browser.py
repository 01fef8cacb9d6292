"""The inbox in a real browser (Chromium) against a real ``symfonic serve``, on both stores.

What a person relies on: they sign in once and see the pauses waiting for
them, new ones arriving without a reload; an answer they give runs the tool
once and shows the outcome; someone else never sees nor answers their pauses;
an invalid answer is refused in place and the pause stays answerable; two tabs
answering at once get one winner and one clear "already answered"; a pause
that expires on screen leaves as expired; edit, reject, text and nested-form
answers each work. The last test runs two workers on one PostgreSQL database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser_support import (
    PAYMENTS_TTL,
    QUICK_TTL,
    Inbox,
    ask,
    bearer,
    pause_state,
    postgres_database,
    serving_inbox,
)
from chromium_support import CHROMIUM, CHROMIUM_ARGS, require_browser

pytestmark = pytest.mark.slow

# Longer than a feed takes to deliver, shorter than the page's fallback poll (5 s):
# a pause that appears within it came through the live feed.
LIVE = 3_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def inbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Inbox]:
    workdir = tmp_path_factory.mktemp(f"inbox-{request.param}")
    if request.param == "sqlite":
        with serving_inbox(f"sqlite:///{workdir / 'symfonic.db'}", workdir) as served:
            yield served
        return
    with postgres_database() as url, serving_inbox(url, workdir) as served:
        yield served


def signed_in(browser: Any, url: str, who: str = "alice", **context: Any) -> Any:
    """A new browser context in which ``who`` signed in through the form."""
    page = browser.new_context(**context).new_page()
    page.goto(f"{url}/inbox")
    page.get_by_label("API key").fill(f"{who}-secret-key")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name=re.compile("Waiting for you")).wait_for()
    assert f"{who}-secret-key" not in page.content()
    return page


def card(page: Any, pause: dict[str, Any]) -> Any:
    return page.locator(f'.card[data-pause-id="{pause["pause"]["pause_id"]}"]')


def left(page: Any, pause: dict[str, Any]) -> Any:
    return page.locator(f'.left[data-pause-id="{pause["pause"]["pause_id"]}"]')


def fill_shipping(
    form: Any,
    recipient: str,
    quantity: str,
    speed: str,
    address: tuple[str, str, str],
    *,
    express: bool = False,
) -> None:
    """Type a shipping answer into the nested form; ``address`` is (street, city, postcode)."""
    form.get_by_label("Recipient").fill(recipient)
    form.get_by_label("Quantity").fill(quantity)
    if express:
        form.get_by_label(re.compile("Express")).check()
    form.get_by_label("Speed").select_option(speed)
    for label, value in zip(("Street", "City", "Postcode"), address, strict=True):
        form.get_by_label(label).fill(value)


def top(locator: Any) -> float:
    """Where ``locator`` starts on the page, in pixels from the top."""
    box = locator.bounding_box()
    assert box is not None, locator
    return float(box["y"])


def expect_text(locator: Any, pattern: str, timeout: float = 10_000) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(re.compile(pattern), timeout=timeout)


def test_alice_sees_her_pause_a_new_one_arrives_live_and_her_approval_runs_the_tool_once(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    first = ask(inbox.url, "pay dora 12")
    page = signed_in(browser, inbox.url)
    mine = card(page, first)
    expect(mine).to_be_visible()
    expect_text(mine, "send_payment")
    expect_text(mine, "dora")
    expect_text(mine, "asked by alice")
    expect_text(mine, r"expires in \d+ min")

    second = ask(inbox.url, "pay erin 3")
    expect(card(page, second)).to_be_visible(timeout=LIVE)

    mine.get_by_role("button", name="Approve").click()
    expect_text(left(page, first), r"approved by you")
    expect_text(left(page, first), r"The agent finished: .*sent 12 EUR to dora")
    expect(mine).to_have_count(0)
    assert len(inbox.payments("dora")) == 1
    page.wait_for_timeout(500)  # a second run would have written by now
    assert len(inbox.payments("dora")) == 1
    assert "alice-secret-key" not in inbox.server.output()
    page.context.close()


def test_the_inbox_answers_with_the_digest_of_the_call_it_showed(
    browser: Any, inbox: Inbox
) -> None:
    first = ask(inbox.url, "pay uma 6")
    digest = first["pause"]["args_digest"]
    assert isinstance(digest, str) and len(digest) == 64
    page = signed_in(browser, inbox.url)
    mine = card(page, first)
    with page.expect_request(lambda request: request.url.endswith("/v1/resume")) as sent:
        mine.get_by_role("button", name="Approve").click()
    assert json.loads(sent.value.post_data)["args_digest"] == digest
    expect_text(left(page, first), r"approved by you")
    page.context.close()


def test_a_wrong_key_is_refused_in_words_on_the_inbox_page(browser: Any, inbox: Inbox) -> None:
    from playwright.sync_api import expect

    page = browser.new_context().new_page()
    page.goto(f"{inbox.url}/inbox")
    page.get_by_label("API key").fill("alice-secret-kex")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text(re.compile("That key was not accepted"))
    assert page.url == f"{inbox.url}/inbox" and "alice-secret-kex" not in page.url
    # The page's own stylesheet still applies: the header bar is dark.
    bar = page.locator("header.bar").evaluate("e => getComputedStyle(e).backgroundColor")
    assert bar == "rgb(29, 36, 48)", bar
    page.get_by_label("API key").fill("alice-secret-key")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name=re.compile("Waiting for you")).wait_for()
    assert "alice-secret-k" not in page.content()
    page.context.close()


def test_bob_never_sees_alices_pauses_nor_answers_one_by_replaying_its_token(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    alices = ask(inbox.url, "pay fred 8")
    bob = signed_in(browser, inbox.url, "bob")
    expect(bob.locator("#empty")).to_be_visible()
    expect(bob.locator(".card")).to_have_count(0)
    theirs = ask(inbox.url, "pay gina 2")
    bob.wait_for_timeout(LIVE)
    expect(bob.locator(".card")).to_have_count(0)
    assert theirs["pause"]["pause_id"] not in bob.content()

    csrf = bob.locator('meta[name="csrf-token"]').get_attribute("content")
    replay = """async ([token, csrf]) => {
        const r = await fetch("v1/resume", {method: "POST", credentials: "same-origin",
          headers: {"Content-Type": "application/json", "Accept": "application/json",
                    "X-CSRF-Token": csrf},
          body: JSON.stringify({token, answer: {decision: "approve"}})});
        return [r.status, await r.text()];
    }"""
    for token in (alices["pause"]["token"], alices["pause"]["pause_id"]):
        status, body = bob.evaluate(replay, [token, csrf])
        assert status in (403, 404, 422), body
        assert alices["pause"]["pause_id"] not in body and "fred" not in body
    assert pause_state(inbox.url, alices["pause"]["pause_id"]) == "pending"
    assert inbox.payments("fred") == []
    bob.context.close()


def test_an_invalid_answer_is_refused_in_place_and_the_pause_stays_answerable(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    pause = ask(inbox.url, "ship the parcel")
    page = signed_in(browser, inbox.url)
    form = card(page, pause)
    fill_shipping(form, "Hana", "0", "next-day", ("Main St 1", "Berlin", "1234"))
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/v1/resume") else None)
    form.get_by_role("button", name="Submit").click()
    expect_text(form, "Enter 1 or more.")
    expect_text(form, "This does not have the expected form")
    expect(form.get_by_label("Quantity")).to_have_attribute("aria-invalid", "true")
    assert sent == []

    # The service checks again: an answer changed on its way is refused with its 422, in words.
    def tamper(route: Any) -> None:
        body = json.loads(route.request.post_data)
        body["answer"]["quantity"] = 99
        route.continue_(post_data=json.dumps(body))

    page.route("**/v1/resume", tamper)
    form.get_by_label("Quantity").fill("2")
    form.get_by_label("Postcode").fill("10115")
    form.get_by_role("button", name="Submit").click()
    expect_text(form.get_by_role("alert"), r"The answer was not accepted: .*quantity")
    assert pause_state(inbox.url, pause["pause"]["pause_id"]) == "pending"

    page.unroute("**/v1/resume")
    form.get_by_role("button", name="Submit").click()
    expect_text(left(page, pause), r"Shipping: .*\"quantity\": ?2")
    page.context.close()


def test_two_tabs_answer_one_pause_one_wins_and_the_other_says_it_was_answered(
    browser: Any, inbox: Inbox
) -> None:
    pause = ask(inbox.url, "pay ivan 4")
    first = signed_in(browser, inbox.url)
    second = first.context.new_page()
    # The second tab must not hear the first one's claim, or on a loaded machine its
    # card leaves before its own click goes out: it has no feed (a 404 makes the page
    # fall back to reading the list) and reads the list once, never again.
    second.route(re.compile(r"/v1/pauses/events"), lambda route: route.fulfill(status=404))
    listings: list[str] = []

    def first_listing_only(route: Any) -> None:
        listings.append(route.request.url)
        if len(listings) == 1:
            route.continue_()
        else:
            route.abort()

    second.route(re.compile(r"/v1/pauses\?"), first_listing_only)
    second.goto(f"{inbox.url}/inbox")
    card(second, pause).get_by_label(re.compile("Reason for rejecting")).fill("not today")
    for page in (first, second):
        card(page, pause).get_by_role("button", name="Approve").wait_for()
    # One tab approves, the other rejects; both clicks go out before either answer returns.
    selector = f'[data-pause-id="{pause["pause"]["pause_id"]}"]'
    first.evaluate(f"document.querySelector('{selector} button.primary').click()")
    second.evaluate(f"document.querySelector('{selector} button.danger').click()")
    words = []
    for page in (first, second):
        outcome = left(page, pause)
        expect_text(outcome, "by you|already answered")
        words.append(outcome.inner_text())
    won = [w for w in words if "The agent finished" in w]
    lost = [w for w in words if "already answered" in w]
    assert len(won) == 1 and len(lost) == 1, words
    approved = won[0] is words[0]
    assert len(inbox.payments("ivan")) == (1 if approved else 0)
    assert ("not today" in won[0]) is not approved
    first.context.close()


def test_a_pause_that_expires_on_screen_leaves_the_list_as_expired(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    page = signed_in(browser, inbox.url)
    pause = ask(inbox.url, "pay judy 1", agent="quick")
    expect(card(page, pause)).to_be_visible(timeout=LIVE)
    expect_text(card(page, pause), r"expires in \d s")
    expect_text(left(page, pause), "expired", timeout=(QUICK_TTL + 3) * 1000)
    expect(card(page, pause)).to_have_count(0)
    page.context.close()


def test_edit_reject_text_and_nested_form_answers(browser: Any, inbox: Inbox) -> None:
    from playwright.sync_api import expect

    edit = ask(inbox.url, "pay kim 10")
    reject = ask(inbox.url, "pay lea 20")
    text = ask(inbox.url, "ask about the logo")
    nested = ask(inbox.url, "ship two books")
    page = signed_in(browser, inbox.url, viewport={"width": 390, "height": 844})

    editing = card(page, edit)
    editing.get_by_role("button", name="Edit").click()
    expect(editing.get_by_label("Amount", exact=True)).to_have_value("10")
    expect(editing.get_by_label("To", exact=True)).to_have_value("kim")
    # The fields open just under the buttons, the reason box above them.
    assert top(editing.get_by_label("Amount", exact=True)) > top(
        editing.get_by_role("button", name="Edit", exact=True)
    ) > top(editing.get_by_label(re.compile("Reason for rejecting")))
    editing.get_by_label("Amount", exact=True).fill("7.5")
    editing.get_by_role("button", name="Approve with changes").click()
    expect_text(left(page, edit), "sent 7.5 EUR to kim")
    expect_text(left(page, edit), r" — approved with changes by you\s*Changed: amount 10 → 7\.5\.")
    assert [p["amount"] for p in inbox.payments("kim")] == [7.5]

    rejecting = card(page, reject)
    reason = rejecting.get_by_label(re.compile("Reason for rejecting"))
    # On a phone the reason is typed before Reject is reached: it sits above the button.
    assert top(reason) < top(rejecting.get_by_role("button", name="Reject"))
    reason.fill("wrong amount")
    rejecting.get_by_role("button", name="Reject").click()
    expect_text(left(page, reject), "rejected this call.*wrong amount")
    expect_text(left(page, reject), " — rejected by you")
    assert "answered" not in left(page, reject).inner_text()
    assert inbox.payments("lea") == []

    answering = card(page, text)
    answering.get_by_label("Your answer").fill("teal")
    answering.get_by_role("button", name="Submit").click()
    expect_text(left(page, text), "I will use teal for the logo")
    expect_text(left(page, text), " — answered by you")

    form = card(page, nested)
    fill_shipping(form, "Mia", "2", "standard", ("Elm Rd 5", "Lyon", "69001"), express=True)
    form.get_by_role("button", name=re.compile("Add item to notes")).click()
    form.get_by_label("Item 1").fill("leave at the door")
    form.get_by_role("button", name="Submit").click()
    outcome = left(page, nested)
    expect_text(outcome, "Shipping:")
    answered = json.loads(outcome.inner_text().split("Shipping:", 1)[1].strip().rstrip("”\""))
    assert answered == {
        "recipient": "Mia", "quantity": 2, "express": True, "speed": "standard",
        "address": {"street": "Elm Rd 5", "city": "Lyon", "postcode": "69001"},
        "notes": ["leave at the door"],
    }
    page.context.close()


def test_pauses_answered_elsewhere_leave_with_a_word_saying_how(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    rejected = ask(inbox.url, "pay quinn 30")
    edited = ask(inbox.url, "pay rosa 40")
    approved = ask(inbox.url, "pay sam 50")
    page = signed_in(browser, inbox.url)
    for pause in (rejected, edited, approved):
        expect(card(page, pause)).to_be_visible()
    page.wait_for_timeout(1_000)  # the feed is open
    # Answered through the API, as a terminal client or another tab would.
    elsewhere = [
        (rejected, {"decision": "reject", "reason": "too much"}),
        (edited, {"decision": "edit", "args": {"to": "rosa", "amount": 4, "currency": "EUR"}}),
        (approved, {"decision": "approve"}),
    ]
    for pause, answer in elsewhere:
        done = httpx.post(
            f"{inbox.url}/v1/resume",
            json={"token": pause["pause"]["token"], "answer": answer},
            headers=bearer("alice"),
            timeout=30,
        )
        assert done.status_code == 200, done.text
    expect_text(left(page, rejected), " — rejected by you$")
    expect_text(left(page, edited), r" — approved with changes by you\s*Changed: amount 40 → 4\.")
    expect_text(left(page, approved), " — approved by you$")
    assert [p["amount"] for p in inbox.payments("rosa")] == [4]
    page.context.close()


def test_a_link_to_a_pause_scrolls_to_it_and_marks_it_even_through_sign_in(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    pauses = [ask(inbox.url, f"pay tess {amount}") for amount in range(1, 7)]
    linked = pauses[-1]["pause"]["pause_id"]
    page = browser.new_context(viewport={"width": 390, "height": 600}).new_page()
    page.goto(f"{inbox.url}/inbox#{linked}")
    page.get_by_label("API key").fill("alice-secret-key")
    page.get_by_role("button", name="Sign in").click()
    target = card(page, pauses[-1])
    expect(target).to_have_class(re.compile(r"\btarget\b"))
    expect(target).to_be_focused()
    expect(target).to_be_in_viewport()
    expect(page.locator(".target")).to_have_count(1)
    assert page.url.endswith(f"/inbox#{linked}")

    page.goto(f"{inbox.url}/inbox#{pauses[0]['pause']['pause_id']}")
    expect(card(page, pauses[0])).to_have_class(re.compile(r"\btarget\b"))
    page.goto(f"{inbox.url}/inbox#no-such-pause")
    expect_text(page.locator("#status"), "The question this link points to is not waiting for you")
    page.context.close()
    for pause in pauses:  # the later tests' keyboard walks through what is left waiting
        body = {"token": pause["pause"]["token"], "answer": None, "status": "cancelled"}
        declined = httpx.post(
            f"{inbox.url}/v1/resume", json=body, headers=bearer("alice"), timeout=30
        )
        assert declined.status_code == 200, declined.text


def test_an_answer_that_leads_to_another_question_shows_it_in_the_list(
    browser: Any, inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    pause = ask(inbox.url, "twice pay pia 5")
    page = signed_in(browser, inbox.url)
    card(page, pause).get_by_role("button", name="Approve").click()
    expect_text(left(page, pause), "The agent has another question: What should the payment")
    follow_up = page.locator(".card", has_text="What should the payment reference say?")
    expect(follow_up).to_be_visible(timeout=LIVE)
    follow_up.get_by_label("Your answer").fill("invoice 12")
    follow_up.get_by_role("button", name="Submit").click()
    expect(follow_up).to_have_count(0)
    expect_text(page.locator(".left", has_text="reference say? —"), "The agent finished")
    assert len(inbox.payments("pia")) == 1
    page.context.close()


def test_a_question_is_declined_by_keyboard_alone(browser: Any, inbox: Inbox) -> None:
    from playwright.sync_api import expect

    pause = ask(inbox.url, "ask about the colour")
    page = browser.new_context().new_page()
    page.goto(f"{inbox.url}/inbox")
    expect(page.get_by_label("API key")).to_be_focused()
    page.keyboard.type("alice-secret-key")
    with page.expect_navigation(url=f"{inbox.url}/inbox"):
        page.keyboard.press("Enter")
    decline = card(page, pause).get_by_role("button", name="Decline")
    decline.wait_for()
    for _ in range(40):
        page.keyboard.press("Tab")
        if decline.evaluate("button => button === document.activeElement"):
            break
    else:
        raise AssertionError("Tab never reached the Decline button")
    page.keyboard.press("Enter")
    expect_text(left(page, pause), "declined by you")
    expect_text(left(page, pause), "The person declined to answer")
    page.context.close()


def test_without_keys_the_inbox_needs_no_sign_in(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with serving_inbox(f"sqlite:///{tmp_path / 'open.db'}", tmp_path, keys="") as served:
        page = browser.new_context().new_page()
        page.goto(f"{served.url}/inbox")
        expect(page.locator("#principal")).to_have_text("local")
        expect(page.get_by_role("button", name="Sign out")).to_have_count(0)
        pause = ask(served.url, "pay olga 9", who="local")
        expect(card(page, pause)).to_be_visible(timeout=LIVE)
        card(page, pause).get_by_role("button", name="Approve").click()
        expect_text(left(page, pause), "sent 9 EUR to olga")
        page.context.close()


@pytest.mark.postgres
def test_a_pause_made_on_worker_a_appears_in_an_inbox_served_by_worker_b(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with (
        postgres_database() as url,
        serving_inbox(url, tmp_path, "a") as worker_a,
        serving_inbox(url, tmp_path, "b") as worker_b,
    ):
        page = signed_in(browser, worker_b.url)
        page.wait_for_timeout(1_000)  # the feed is open
        # When each card reached the page, by the same clock the server stamps pauses with.
        page.evaluate("""() => { window.seen = {};
            new MutationObserver(() => document.querySelectorAll(".card").forEach((c) => {
                window.seen[c.dataset.pauseId] ??= Date.now(); }))
            .observe(document.getElementById("pauses"), {childList: true}); }""")
        delays = []
        for amount in (6, 7, 8):
            pause = ask(worker_a.url, f"pay noor {amount}")
            expect(card(page, pause)).to_be_visible(timeout=LIVE)
            seen_ms = page.evaluate(f"window.seen['{pause['pause']['pause_id']}']")
            expires = datetime.fromisoformat(pause["pause"]["expires_at"])
            created = expires - timedelta(seconds=PAYMENTS_TTL)
            delays.append(seen_ms / 1000 - created.timestamp())
        print(
            "\npause committed on worker A -> on screen on worker B: "
            + ", ".join(f"{delay:.3f}" for delay in delays) + " s"
        )
        assert max(delays) < 1.0, delays
        card(page, pause).get_by_role("button", name="Approve").click()
        expect_text(left(page, pause), "sent 8 EUR to noor")
        assert [p["amount"] for p in worker_b.payments("noor")] == [8]
        page.context.close()
