"""The CopilotKit example on a real ``symfonic serve``: built, served, and driven.

``examples/copilotkit`` is built once with its own Vite (from the packages
``npm ci`` installed from its lockfile; nothing is fetched here) into a temporary
directory, and served by a static file server on one loopback port, so the page's
origin differs from the API's and the browser really goes through CORS
(``symfonic serve --cors-origin``). Where Node, npm or the example's packages are
missing the tests are skipped and say how to install them; in CI
(``SYMFONIC_REQUIRE_BROWSER=1``) that fails instead.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from chromium_support import missing, require_browser
from serve_support import Server, serving

HERE = Path(__file__).parent
EXAMPLE = HERE.parent.parent / "examples" / "copilotkit"
KEYS = "alice=alice-secret-key,bob=bob-secret-key,olga=olga-secret-key:operator"
AGENT = "copilotkit_agents:payments"


def require_example() -> None:
    """Skip (or, in CI, fail) when Chromium, Node or the example's packages are missing."""
    require_browser()
    if shutil.which("node") is None or shutil.which("npm") is None:
        missing("Node.js and npm are not installed (the example needs Node 20.19+)")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    major, minor = (int(part) for part in version.strip().lstrip("v").split(".")[:2])
    if not (major > 22 or (major, minor) >= (22, 12) or (major == 20 and minor >= 19)):
        missing(f"Node.js {version.strip()} is too old for the example's Vite (20.19+ or 22.12+)")
    if not (EXAMPLE / "node_modules" / ".bin" / "vite").exists():
        missing(f"the example's packages are not installed (cd {EXAMPLE} && npm ci)")


def build_example(out: Path) -> Path:
    """``vite build`` of the example into ``out``; the build's own words if it fails."""
    built = subprocess.run(
        [str(EXAMPLE / "node_modules" / ".bin" / "vite"), "build", "--outDir", str(out),
         "--emptyOutDir", "--logLevel", "warn"],
        cwd=EXAMPLE, capture_output=True, text=True, timeout=600,
        env={**os.environ, "SCARF_ANALYTICS": "false"},
    )
    assert built.returncode == 0, f"the example did not build:\n{built.stdout}\n{built.stderr}"
    return out


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def static_site(root: Path) -> Iterator[str]:
    """``root`` served on a free loopback port; yields its origin."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Served:
    """The symfonic server, the page's origin, and the ledger of payments really sent."""

    server: Server
    site: str
    ledger: Path

    @property
    def api(self) -> str:
        return self.server.url

    def page_url(self, query: str = "") -> str:
        return f"{self.site}/?server={self.api}{query}"

    def payments(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines()]

    def pending(self, thread_id: str, who: str = "alice") -> dict[str, Any]:
        """The pause waiting on ``thread_id``, as the native API lists it to ``who``."""
        listed = httpx.get(f"{self.api}/v1/pauses", headers=bearer(who), timeout=10)
        pauses = [p for p in listed.json()["pauses"] if p["session_id"] == thread_id]
        assert len(pauses) == 1, pauses
        return dict(pauses[0])

    def pending_token(self, thread_id: str, who: str = "alice") -> str:
        """The token of the pause waiting on ``thread_id``."""
        return str(self.pending(thread_id, who)["token"])


def bearer(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {who}-secret-key", "Accept": "application/json"}


@contextmanager
def serving_example(workdir: Path, site: str) -> Iterator[Served]:
    """``symfonic serve`` the test agent on SQLite, letting the page's origin call it."""
    ledger = workdir / "ledger.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "COPILOTKIT_TEST_LEDGER": str(ledger),
        "COPILOTKIT_TEST_SLOW_PAYMENT": "2",
    }
    store = f"sqlite:///{workdir / 'symfonic.db'}"
    with serving(store, workdir / "server.log", AGENT, "--cors-origin", site,
                 keys=KEYS, env=env) as server:
        yield Served(server, site, ledger)
