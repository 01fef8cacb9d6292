"""The API documentation pages work offline: every asset they load comes from the app itself."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from http_support import KEYS
from symfonic.demo import demo_agent
from symfonic.server.app import create_app


class _Assets(HTMLParser):
    """The URLs a page's tags load: ``src`` and ``href`` attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in {"src", "href"} and value]


def _assets(page: str) -> list[str]:
    parser = _Assets()
    parser.feed(page)
    return parser.urls


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_nothing_from_another_host(page: str, tmp_path: Path) -> None:
    app = create_app(demo_agent(), store=f"sqlite:///{tmp_path / 'docs.db'}", api_keys=KEYS)
    with TestClient(app) as client:
        # No key: the docs are readable by whoever can reach the service, as before.
        html = client.get(page)
        assert html.status_code == 200
        for external in ("http://", "https://", "'//", '"//'):
            assert external not in html.text, external
        urls = _assets(html.text)
        scripts = [url for url in urls if url.endswith(".js")]
        assert scripts, "the page loads its script from the app"
        for url in urls:
            assert url.startswith("/"), url
            asset = client.get(url)
            assert asset.status_code == 200, url
            assert len(asset.content) > 1000, url
        if page == "/docs":
            # Swagger UI's badge would send the document's address to an online validator.
            assert '"validatorUrl": null' in html.text
            assert any(url.endswith(".css") for url in urls)
        assert client.get("/openapi.json").status_code == 200
