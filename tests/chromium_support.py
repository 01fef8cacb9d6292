"""Debian's Chromium for the browser tests: where it is, how it starts, and when to skip.

The browser is ``/usr/bin/chromium``, driven by Playwright; nothing here ever
downloads a browser. Where Chromium (or something else a browser test needs) is
missing, the test is skipped and says why, unless ``SYMFONIC_REQUIRE_BROWSER=1``
(CI sets it), which turns that skip into a failure, as
``SYMFONIC_REQUIRE_POSTGRES`` does for PostgreSQL.
"""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REQUIRE_BROWSER = os.environ.get("SYMFONIC_REQUIRE_BROWSER") == "1"


def missing(problem: str) -> None:
    """Skip a browser test because of ``problem`` (in CI: fail it)."""
    if REQUIRE_BROWSER:
        pytest.fail(f"SYMFONIC_REQUIRE_BROWSER=1 but {problem}")
    pytest.skip(problem)


def require_browser() -> None:
    """Skip (or, in CI, fail) a browser test when Chromium or Playwright is missing."""
    if not os.access(CHROMIUM, os.X_OK):
        missing(f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing("Playwright's Python package is not installed (pip install -e '.[dev]')")
