"""The inbox with 2,000 questions waiting for one scope, in a real browser (Chromium).

What a person with a busy scope relies on: the page shows the first of them
at once, with how many wait in all; more load as they scroll; the search box
and the kind filter find the few they look for; a question asked while the
page is open appears (placed from the feed, the list never asked again), and
one answered elsewhere leaves. Screenshots at desktop and phone width are left
under ``/tmp`` to be looked at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from browser_support import Inbox, ask, bearer
from browser_support import serving_inbox as serving
from bulk_pauses import bulk_pauses
from chromium_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from symfonic.core.contracts.types import InteractionKind
from symfonic.storage import open_store

pytestmark = pytest.mark.slow

KEYS = "alice=alice-secret-key,bob=bob-secret-key,carol=carol-secret-key:finance"
WAITING = 2_000
SEARCHED = 10
SHOTS = Path("/tmp")


async def _fill(url: str) -> None:
    """2,000 questions for the ``finance`` scope, ten of them about a warehouse."""
    async with open_store(url) as store:
        start = datetime.now(UTC) - timedelta(hours=1)
        refunds = [f"Approve refund {i} for order {1000 + i}?" for i in range(WAITING - SEARCHED)]
        await bulk_pauses(
            store,
            refunds,
            start=start,
            principal="bob",
            agent="payments",
            audience="finance",
            kind=InteractionKind.APPROVAL,
        )
        await bulk_pauses(
            store,
            [f"Which warehouse ships order {i}?" for i in range(SEARCHED)],
            start=start + timedelta(seconds=30),
            principal="bob",
            agent="payments",
            audience="finance",
        )


@pytest.fixture(scope="module")
def busy_inbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inbox]:
    require_browser()
    workdir = tmp_path_factory.mktemp("inbox-pages")
    url = f"sqlite:///{workdir / 'symfonic.db'}"
    # The browser's loop runs on this thread: the store is filled on another.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, _fill, url).result()
    with serving(url, workdir, keys=KEYS) as served:
        yield served


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


def carols_inbox(browser: Any, url: str, width: int, height: int) -> Any:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(f"{url}/inbox")
    page.get_by_label("API key").fill("carol-secret-key")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name=re.compile("Waiting for you")).wait_for()
    return page


def heading(page: Any) -> Any:
    return page.get_by_role("heading", name=re.compile("Waiting for you"))


def test_the_first_page_shows_at_once_with_the_total_and_more_load_on_scroll(
    browser: Any, busy_inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    page = carols_inbox(browser, busy_inbox.url, 1280, 900)
    page.reload()
    # The first page, from a fresh load, within a second.
    expect(page.locator(".card")).to_have_count(50, timeout=1_000)
    expect(heading(page)).to_have_text("Waiting for you: 2,000")
    expect(page.locator(".card").first).to_contain_text("Approve refund 0 for order 1000?")
    page.screenshot(path=str(SHOTS / "inbox-pages-desktop.png"))

    page.locator(".card").last.scroll_into_view_if_needed()
    expect(page.locator(".card")).to_have_count(100, timeout=3_000)
    page.get_by_role("button", name=re.compile("Load more")).click()
    expect(page.locator(".card")).to_have_count(150, timeout=3_000)
    expect(page.locator(".card").nth(149)).to_contain_text("Approve refund 149 for order 1149?")
    page.context.close()


def test_search_and_kind_find_the_few_asked_for(browser: Any, busy_inbox: Inbox) -> None:
    from playwright.sync_api import expect

    page = carols_inbox(browser, busy_inbox.url, 390, 844)
    expect(page.locator(".card")).to_have_count(50)
    page.get_by_label("Search").fill("WAREHOUSE")
    expect(heading(page)).to_have_text(f"Waiting for you: {SEARCHED}")
    expect(page.locator(".card")).to_have_count(SEARCHED)
    expect(page.get_by_role("button", name=re.compile("Load more"))).to_be_hidden()
    page.screenshot(path=str(SHOTS / "inbox-pages-phone.png"), full_page=False)

    page.get_by_label("Search").fill("")
    page.get_by_label("Kind").select_option("input")
    expect(page.locator(".card")).to_have_count(SEARCHED)
    page.get_by_label("Kind").select_option("approval")
    expect(heading(page)).to_have_text(f"Waiting for you: {WAITING - SEARCHED:,}")
    page.get_by_label("Search").fill("refund 1999")
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator("#empty")).to_contain_text("matches these filters")
    page.context.close()


def test_a_new_question_appears_and_one_answered_elsewhere_leaves(
    browser: Any, busy_inbox: Inbox
) -> None:
    from playwright.sync_api import expect

    page = carols_inbox(browser, busy_inbox.url, 1280, 900)
    expect(page.locator(".card")).to_have_count(50)
    total = int(heading(page).inner_text().split(":")[1].replace(",", ""))
    listings: list[str] = []
    page.on(
        "request",
        lambda request: listings.append(request.url) if "/v1/pauses?" in request.url else None,
    )

    outcome = ask(busy_inbox.url, "pay dora 12", who="carol", agent="payments")
    new = page.locator(f'.card[data-pause-id="{outcome["pause"]["pause_id"]}"]')
    expect(new).to_have_count(1, timeout=1_000)
    expect(new).to_contain_text("send_payment")  # its details came with it
    expect(heading(page)).to_have_text(f"Waiting for you: {total + 1:,}")
    assert listings == [], "the page asked for the list again instead of placing the pause"

    with httpx.Client(base_url=busy_inbox.url, headers=bearer("carol"), timeout=30) as api:
        body = {"token": outcome["pause"]["token"], "answer": {"decision": "approve"}}
        assert api.post("/v1/resume", json=body).status_code == 200
    expect(new).to_have_count(0, timeout=1_000)
    left = page.locator(f'.left[data-pause-id="{outcome["pause"]["pause_id"]}"]')
    expect(left).to_contain_text("approved by you")
    expect(heading(page)).to_have_text(f"Waiting for you: {total:,}")
    page.context.close()


def test_without_the_feed_the_page_still_pages_and_counts(browser: Any, busy_inbox: Inbox) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # A proxy that will not stream: the page falls back to asking every few seconds.
    context.route(re.compile(r".*/v1/pauses/events.*"), lambda route: route.fulfill(status=503))
    page = context.new_page()
    page.goto(f"{busy_inbox.url}/inbox")
    page.get_by_label("API key").fill("carol-secret-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".card")).to_have_count(50)
    total = int(heading(page).inner_text().split(":")[1].replace(",", ""))
    assert total >= WAITING

    outcome = ask(busy_inbox.url, "pay erin 3", who="carol", agent="payments")
    expect(heading(page)).to_have_text(f"Waiting for you: {total + 1:,}", timeout=8_000)
    page.get_by_role("button", name=re.compile("Load more")).click()
    expect(page.locator(".card")).to_have_count(100)
    with httpx.Client(base_url=busy_inbox.url, headers=bearer("carol"), timeout=30) as api:
        body = {"token": outcome["pause"]["token"], "answer": {"decision": "approve"}}
        assert api.post("/v1/resume", json=body).status_code == 200
    expect(heading(page)).to_have_text(f"Waiting for you: {total:,}", timeout=8_000)
    context.close()
