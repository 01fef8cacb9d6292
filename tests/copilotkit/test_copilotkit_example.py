"""The CopilotKit example (``examples/copilotkit``) in Chromium against a real ``symfonic serve``.

What a person using a CopilotKit front end on symfonic relies on: the approval
question appears as a card in the chat, and answering it goes on with the run
(approve pays once, reject pays nothing, an edit pays the edited amount, a form
leads to the next question). And the page never gets stuck: a reload while the
card waits brings the card back, an answer given elsewhere is reported instead
of wedging the chat, and two tabs approving at once both finish with one payment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chromium_support import CHROMIUM, CHROMIUM_ARGS
from copilotkit_support import (
    Served,
    bearer,
    build_example,
    require_example,
    serving_example,
    static_site,
)

pytestmark = pytest.mark.slow

ALICE_IBAN = "DE89 3704 0044 0532 0130 00"
BOB_IBAN = "FR14 2004 1010 0505 0001 3M02 606"
CAROL_IBAN = "NL91 ABNA 0417 1643 00"
WAIT = 20_000  # ms: a run on this shared machine, including the page's first load


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_example()
    workdir = tmp_path_factory.mktemp("copilotkit")
    built = build_example(workdir / "dist")
    with static_site(built) as site, serving_example(workdir, site) as served:
        yield served


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A browser context; the page may fetch nothing but the site and the API."""
    opened = browser.new_context(viewport={"width": 900, "height": 760})
    opened.set_default_timeout(WAIT)
    fetched: list[str] = []
    opened.on("request", lambda request: fetched.append(request.url))
    try:
        yield opened
    finally:
        opened.close()
    elsewhere = [url for url in fetched if not url.startswith(("http://127.0.0.1:", "data:"))]
    assert elsewhere == [], f"the page fetched from outside: {elsewhere}"


def signed_in(context: Any, served: Served, query: str = "") -> Any:
    page = context.new_page()
    page.goto(served.page_url(query))
    page.get_by_label("API key").fill("alice-secret-key")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_placeholder(re.compile("Pay alice")).wait_for()
    return page


def say(page: Any, text: str) -> None:
    box = page.get_by_placeholder(re.compile("Pay alice"))
    box.fill(text)
    box.press("Enter")


def card(page: Any) -> Any:
    return page.locator("section.card")


def approval(page: Any) -> Any:
    found = page.get_by_role("region", name="Approval")
    found.wait_for()
    return found


def test_approve_pays_once_and_the_chat_goes_on(
    context: Any, served: Served, tmp_path: Path
) -> None:
    page = signed_in(context, served)
    say(page, "Pay alice 42 EUR for the design work")
    asked = approval(page)
    assert "Approve send_payment?" in asked.inner_text()
    assert ALICE_IBAN in asked.inner_text() and "42" in asked.inner_text()
    page.screenshot(path=str(tmp_path / "approval.png"))
    asked.get_by_role("button", name="Approve").click()
    page.get_by_text(f"Done. payment sent: 42 EUR to {ALICE_IBAN}").wait_for()
    assert card(page).count() == 0
    # The tool's real result, not the {"approved": true} CopilotKit put in its place.
    tool = page.locator('.tool[data-tool="send_payment"]')
    assert f"payment sent: 42 EUR to {ALICE_IBAN}" in tool.inner_text()
    assert served.payments() == [{"to_iban": ALICE_IBAN, "amount": 42.0, "currency": "EUR"}]
    say(page, "hello")
    page.get_by_text(re.compile("I can send payments to your contacts")).wait_for()


def thread_of(page: Any) -> str:
    """The thread the page shows: it enters the URL once its first run starts."""
    page.wait_for_url(re.compile(r"[?&]thread="))
    found = re.search(r"[?&]thread=([^&]+)", page.url)
    assert found is not None
    return found.group(1)


def paid(served: Served, iban: str, amount: float) -> int:
    return sum(1 for p in served.payments() if p["to_iban"] == iban and p["amount"] == amount)


def test_reject_pays_nothing(context: Any, served: Served) -> None:
    page = signed_in(context, served)
    say(page, "Pay bob 13 EUR")
    asked = approval(page)
    asked.get_by_role("button", name="Reject").click()
    asked.get_by_label("Reason (optional)").fill("wrong amount")
    asked.get_by_role("button", name="Reject").click()
    page.get_by_text(re.compile("I did not send the payment")).wait_for()
    assert "wrong amount" in page.locator("main").inner_text()
    assert card(page).count() == 0
    assert paid(served, BOB_IBAN, 13) == 0


def test_an_edited_approval_pays_the_edited_amount(context: Any, served: Served) -> None:
    page = signed_in(context, served)
    say(page, "Pay bob 10 EUR")
    asked = approval(page)
    asked.get_by_role("button", name="Edit").click()
    asked.get_by_label("amount").fill("12")
    asked.get_by_role("button", name="Approve with these values").click()
    page.get_by_text(f"Done. payment sent: 12 EUR to {BOB_IBAN}").wait_for()
    assert (paid(served, BOB_IBAN, 10), paid(served, BOB_IBAN, 12)) == (0, 1)


def test_a_form_then_a_second_pause(context: Any, served: Served, tmp_path: Path) -> None:
    page = signed_in(context, served)
    say(page, "Pay dave 15 EUR")
    form = page.get_by_role("region", name="Question")
    form.wait_for()
    assert "Dave is not among your contacts" in form.inner_text()
    form.get_by_label("Account holder").fill("Dave Doe")
    form.get_by_label("IBAN").fill("DE02 1203 0000 0000 2020 51")
    page.screenshot(path=str(tmp_path / "form.png"))
    form.get_by_role("button", name="Send").click()
    asked = approval(page)  # the second pause of the same turn
    assert "DE02 1203 0000 0000 2020 51" in asked.inner_text()
    asked.get_by_role("button", name="Approve").click()
    page.get_by_text("Done. payment sent: 15 EUR to DE02 1203 0000 0000 2020 51").wait_for()
    assert paid(served, "DE02 1203 0000 0000 2020 51", 15) == 1


def test_a_reload_while_the_card_waits_brings_it_back(
    context: Any, served: Served, tmp_path: Path
) -> None:
    page = signed_in(context, served)
    say(page, "Pay alice 21 EUR")
    approval(page)
    thread_of(page)
    page.reload()
    asked = approval(page)
    page.screenshot(path=str(tmp_path / "reloaded.png"))
    assert "Pay alice 21 EUR" in page.locator("main").inner_text()
    assert "21" in asked.inner_text()
    asked.get_by_role("button", name="Approve").click()
    page.get_by_text(f"Done. payment sent: 21 EUR to {ALICE_IBAN}").wait_for()
    assert paid(served, ALICE_IBAN, 21) == 1


def test_an_answer_given_elsewhere_is_reported_and_the_chat_goes_on(
    context: Any, served: Served, tmp_path: Path
) -> None:
    page = signed_in(context, served)
    say(page, "Pay alice 33 EUR")
    asked = approval(page)
    token = served.pending_token(thread_of(page))
    elsewhere = httpx.post(
        f"{served.api}/v1/resume", headers=bearer("alice"), timeout=30,
        json={"token": token, "answer": {"decision": "reject", "reason": "not today"}},
    )
    assert elsewhere.status_code == 200, elsewhere.text
    asked.get_by_role("button", name="Approve").click()
    page.get_by_text(re.compile("already answered by alice")).wait_for()
    page.screenshot(path=str(tmp_path / "elsewhere.png"))
    said = page.locator("main").inner_text()
    assert "not today" in said and "Your answer was not used" in said, said
    assert paid(served, ALICE_IBAN, 33) == 0
    say(page, "Pay bob 34 EUR")  # not wedged: the next message runs
    approval(page).get_by_role("button", name="Reject").click()
    page.get_by_role("region", name="Approval").get_by_role("button", name="Reject").click()
    page.get_by_text("I did not send the payment. The person rejected this call.").wait_for()


def test_a_card_handed_to_another_audience_says_who_it_waits_for(
    context: Any, served: Served, tmp_path: Path
) -> None:
    page = signed_in(context, served)
    say(page, "Pay alice 44 EUR")
    asked = approval(page)
    assert asked.get_by_role("button", name="Approve").is_visible()  # hers to answer
    pause_id = served.pending(thread_of(page))["pause_id"]
    handed = httpx.post(
        f"{served.api}/v1/pauses/{pause_id}/reassign", headers=bearer("olga"), timeout=30,
        json={"audience": "finance", "reason": "alice is on leave"},
    )
    assert handed.status_code == 200, handed.text
    page.reload()
    asked = approval(page)
    asked.get_by_role("status").wait_for()
    page.screenshot(path=str(tmp_path / "waiting.png"))
    assert asked.get_by_role("status").inner_text() == "Waiting for finance"
    assert "44" in asked.inner_text()  # what it asks is still shown
    assert asked.get_by_role("button").count() == 0  # no button she cannot use
    assert paid(served, ALICE_IBAN, 44) == 0


def test_two_tabs_approving_at_once_pay_once_and_both_finish(
    context: Any, served: Served, tmp_path: Path
) -> None:
    first = signed_in(context, served)
    say(first, "Pay carol 7 EUR")  # paying carol takes 2 s: the answers meet
    approval(first)
    second = signed_in(context, served, f"&thread={thread_of(first)}")
    approval(second)
    approval(first).get_by_role("button", name="Approve").click()
    approval(second).get_by_role("button", name="Approve").click()
    for page in (first, second):
        page.get_by_text(f"Done. payment sent: 7 EUR to {CAROL_IBAN}").wait_for()
        assert card(page).count() == 0
        # Each tab shows the tool's real result, not CopilotKit's {"approved": true}.
        tool = page.locator('.tool[data-tool="send_payment"]')
        assert f"payment sent: 7 EUR to {CAROL_IBAN}" in tool.inner_text()
    second.screenshot(path=str(tmp_path / "second-tab.png"))
    assert paid(served, CAROL_IBAN, 7) == 1
    say(second, "hello")  # neither tab is wedged
    second.get_by_text(re.compile("I can send payments to your contacts")).wait_for()
