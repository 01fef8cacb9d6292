"""The report's HTTP section: ``POST /v1/resume`` against a real ``symfonic serve``.

Reads ``results.json``'s ``http`` section (written by :mod:`bench.http_step`); a
run without it (``--no-http``, or an older file) renders nothing.
"""

from __future__ import annotations

from typing import Any

from bench.report.figures import STORE_TITLES, Results, markdown_table

HEADER = (
    "clients | resumes/s | p50, ms | p99, ms | resumes (failed) | server CPU per resume, ms | "
    "server cores busy | client CPU per resume, ms"
)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"


def server_cores(row: dict[str, Any]) -> float | None:
    """Cores the server process kept busy while resuming: its CPU time ÷ wall time."""
    cpu, rate = row.get("server_cpu_ms_per_resume"), row.get("resumes_per_s")
    return None if cpu is None or not rate else cpu * rate / 1000


def _row(row: dict[str, Any]) -> list[str]:
    return [
        str(row["clients"]),
        _cell(row.get("resumes_per_s")),
        _cell(row.get("p50_ms")),
        _cell(row.get("p99_ms")),
        f"{row.get('resumes', 0):,} ({row.get('failures', 0)})",
        _cell(row.get("server_cpu_ms_per_resume")),
        _cell(server_cores(row)),
        _cell(row.get("client_cpu_ms_per_resume")),
    ]


def render_http(results: Results) -> list[str]:
    http = results.http
    if not http:
        return []
    options = http.get("options", {})
    lines = [
        "## HTTP: resuming through `symfonic serve`",
        "",
        "`POST /v1/resume` with `Accept: application/json` (the clock stops when the resumed",
        "turn has published) against a real `symfonic serve` process (uvicorn, one process, the",
        "scripted demo agent) on loopback; the clients are one httpx process on the same cores.",
        "Every pause is created before the clock starts. Per level: up to "
        f"{options.get('resumes', '?')} resumes, at most {options.get('time_limit', '?')} s.",
        "CPU is the server's (`/proc/<pid>/stat`) and the client's, over the resumes only.",
        "",
    ]
    lines += [f"- **problem**: {problem}" for problem in http.get("problems", [])]
    if http.get("problems"):
        lines.append("")
    rows: list[dict[str, Any]] = http.get("results", [])
    for store in [s for s in STORE_TITLES if any(r["store"] == s for r in rows)]:
        lines += [f"### {STORE_TITLES[store]}", ""]
        in_process = results.value("symfonic", store, 0, 1, "resume_p50_ms")
        if in_process is not None:
            lines += [
                f"In process (no HTTP), a resume took {in_process:.2f} ms p50 at history 0, "
                "concurrency 1 (the matrix above).",
                "",
            ]
        ordered = sorted((r for r in rows if r["store"] == store), key=lambda r: int(r["clients"]))
        lines += markdown_table(HEADER, [_row(row) for row in ordered])
    return lines
