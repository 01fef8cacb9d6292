"""The API documentation pages in a real browser: nothing they load leaves the service.

``tests/http/test_docs.py`` reads the pages' HTML; the scripts they load then
draw the page and may fetch more (ReDoc's badge image comes from a CDN). Here
Chromium opens each page and every request that reaches the network is
recorded: all of them must go to the service itself, and the page must still
show the API.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chromium_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from serve_support import serving

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("page", "shows"), [("/redoc", "API docs by Redocly"),
                                             ("/docs", "/v1/resume")])
def test_the_docs_pages_fetch_nothing_from_another_host(
    page: str, shows: str, tmp_path: Path
) -> None:
    require_browser()
    from playwright.sync_api import Route, sync_playwright

    fetched: list[str] = []

    def record(route: Route) -> None:
        fetched.append(route.request.url)
        route.continue_()

    with serving(f"sqlite:///{tmp_path / 'docs.db'}", tmp_path / "serve.log", keys="") as server, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page()
            tab.route("**/*", record)  # what the browser asks the network for, CSP allowing
            tab.goto(f"{server.url}{page}", wait_until="networkidle")
            tab.get_by_text(shows).first.wait_for()
            assert "Agent turns that pause for a person" in tab.inner_text("body")
        finally:
            browser.close()
    assert f"{server.url}{page}" in fetched
    elsewhere = [url for url in fetched if not url.startswith(f"{server.url}/")]
    assert elsewhere == []
