"""The HTTP step of ``python -m bench``: :mod:`bench.http_bench` in a child process.

It runs after the matrix, in the same run and process tree, on the same stores.
A child of its own, like every configuration, so that a hung server or client
cannot hang the run past its time bound; the child saves its JSON after every
level, so a timeout keeps what was measured.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.matrix import BUSY_THRESHOLD, Store, busy_elsewhere, child_env, run_bounded, tail

# Seconds the step may take beyond its levels' own limits: each server's start-up
# (imports, migrations) and the clients' set-up.
PER_STORE_SLACK = 60.0
PER_LEVEL_SLACK = 20.0


@dataclass(frozen=True)
class HttpOptions:
    clients: list[int]
    resumes: int
    # Per level: the most seconds spent creating its pauses, and again resuming them.
    seconds: float

    def bound(self, stores: int) -> float:
        """The step's time bound, in seconds, for ``stores`` stores."""
        per_level = 2 * self.seconds + PER_LEVEL_SLACK
        return stores * (PER_STORE_SLACK + len(self.clients) * per_level)


def _command(stores: list[Store], options: HttpOptions, out: Path, workdir: Path) -> list[str]:
    command = [sys.executable, "-m", "bench.http_bench", "--out", str(out)]
    command += ["--workdir", str(workdir), "--stores", ",".join(store.kind for store in stores)]
    command += ["--clients", ",".join(str(c) for c in options.clients)]
    command += ["--resumes", str(options.resumes), "--time-limit", str(options.seconds)]
    postgres = [store.url for store in stores if store.kind == "postgresql"]
    if postgres:
        command += ["--postgres-url", postgres[0]]
    return command


def run_http_step(stores: list[Store], options: HttpOptions, workdir: Path) -> dict[str, Any]:
    """Run the HTTP benchmark on ``stores``; the ``http`` section of results.json."""
    workdir.mkdir(parents=True, exist_ok=True)
    out, log = workdir / "http.json", workdir / "http.log"
    out.unlink(missing_ok=True)
    busy = busy_elsewhere()
    bound = options.bound(len(stores))
    began = time.monotonic()
    code = run_bounded(_command(stores, options, out, workdir), log, bound, child_env())
    section: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {"results": []}
    problems = [f"{e['store']}: {e['error']}" for e in section.get("errors", [])]
    if code is None:
        problems.append(f"timed out after {bound:.0f} s; the levels measured by then are kept")
    elif not section.get("complete"):
        problems.append(f"exited {code} without finishing: {tail(log, 1500)}")
    failing = [r for r in section["results"] if r.get("failures")]
    problems += [
        f"{r['store']}, {r['clients']} clients: {r['failures']} resumes failed "
        f"(e.g. {r['failure_samples'][:1]})"
        for r in failing
    ]
    section |= {
        "status": "error" if problems else "ok",
        "problems": problems,
        "wall_seconds": round(time.monotonic() - began, 1),
        "bound_seconds": round(bound),
        "cpu_busy_before": round(busy, 3),
    }
    if busy > BUSY_THRESHOLD:
        section["notes"] = [
            f"the machine was {busy:.0%} busy with other work just before the HTTP step"
        ]
    return section
