"""``python -m tools.openapi``: write the API's OpenAPI document and its TypeScript types.

``docs/openapi.json`` is what ``create_app`` serves at ``/openapi.json``,
written with sorted keys so a change to the API is a readable diff.
``clients/typescript/symfonic-api.d.ts`` is generated from it by
``openapi-typescript``, at the version ``clients/typescript/package-lock.json``
pins (``npm ci`` there first). ``tests/test_api_documents.py`` fails when either
file differs from what this writes, and names this command.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = ROOT / "docs" / "openapi.json"
TYPESCRIPT = ROOT / "clients" / "typescript"
TYPES = TYPESCRIPT / "symfonic-api.d.ts"
GENERATOR = TYPESCRIPT / "node_modules" / ".bin" / "openapi-typescript"
# A field with a default is optional in a request: the service fills it in.
OPTIONS = ("--default-non-nullable", "false")
REGENERATE = "python -m tools.openapi (after `npm ci` in clients/typescript)"


def document() -> dict[str, Any]:
    """The OpenAPI document of an app serving the demo agent (the routes do not vary
    with the agents); its store is never opened."""
    from symfonic.demo import demo_agent
    from symfonic.server.app import create_app

    with tempfile.TemporaryDirectory() as scratch:
        app = create_app(demo_agent(f"sqlite:///{scratch}/unused.db"), api_keys="")
        return app.openapi()


def rendered(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generated_types(openapi: Path) -> str:
    """What openapi-typescript makes of the document at ``openapi``."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "types.d.ts"
        subprocess.run(
            [str(GENERATOR), str(openapi), *OPTIONS, "--output", str(out)],
            check=True,
            capture_output=True,
            cwd=TYPESCRIPT,
        )
        return out.read_text()


def main() -> int:
    OPENAPI.write_text(rendered(document()))
    print(f"wrote {OPENAPI.relative_to(ROOT)}")
    if not GENERATOR.exists():
        print("openapi-typescript is not installed: run `npm ci` in clients/typescript, then again")
        return 1
    TYPES.write_text(generated_types(OPENAPI))
    print(f"wrote {TYPES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
