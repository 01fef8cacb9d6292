"""The environment variables each command reads, in one table for its ``--help``."""

from __future__ import annotations

import textwrap

COLUMN = 24

_CLIENT = {
    "SYMFONIC_API_KEY": "your API key for the service, sent only as a bearer header "
    "(unset: no key is sent)",
    "NO_COLOR": "set (to anything but empty) to turn colour off (colour is also off when output is "
    "not a terminal)",
}
_STORE = {
    "SYMFONIC_STORE": "store URL when --store is not given (default sqlite:///symfonic.db)",
    "SYMFONIC_POOL_SIZE": "PostgreSQL connections per process (default 10)",
    "SYMFONIC_POOL_TIMEOUT": "seconds to wait for a PostgreSQL connection (default 10)",
}

_TELEMETRY = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "OTLP collector to export traces and metrics to, e.g. "
    "http://127.0.0.1:4318 (unset: nothing is exported; needs symfonic[otel])",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "the same, for "
    "one signal only",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf (default) or grpc",
    "OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER": "otlp, console or none (default: otlp "
    "when an endpoint is set, else none)",
    "OTEL_SERVICE_NAME": "the service name traces and metrics carry (default symfonic)",
    "OTEL_SDK_DISABLED": "true: export nothing, whatever the others say",
}

READS: dict[str, dict[str, str]] = {
    "chat": _CLIENT,
    "pauses": _CLIENT,
    "webhooks": _CLIENT,
    "demo": _STORE,
    "prune": _STORE,
    "vacuum": _STORE,
    "migrate": _STORE,
    "audit": _STORE,
    "serve": {
        "SYMFONIC_API_KEYS": "keys the service accepts, 'alice=key1,carol=key3:approver' "
        "(unset or empty: everyone is 'local', loopback only)",
        **_STORE,
        "SYMFONIC_NO_MIGRATE": "1: refuse to start on a store older than this version, as "
        "--no-migrate does",
        "SYMFONIC_WEBHOOK_SECRET": "the secret every --webhook is signed with: whsec_ "
        "followed by base64 (needed with --webhook)",
        "SYMFONIC_STORE": "store URL when --store is not given; it overrides the store the "
        "agents declare (default: theirs, else sqlite:///symfonic.db)",
        "SYMFONIC_GRACE": "seconds work in flight has to finish on SIGTERM (default 30)",
        "OPENAI_API_KEY, ANTHROPIC_API_KEY": "read by the model provider an agent uses",
        **_TELEMETRY,
    },
}


def epilog(command: str) -> str:
    """The ``environment:`` block that ends ``symfonic COMMAND --help``."""
    rows = READS.get(command, {})
    if not rows:
        return ""
    lines = ["environment:"]
    for name, what in rows.items():
        head = f"  {name}"
        if len(head) >= COLUMN - 1:
            lines.append(head)
            head = ""
        lines += textwrap.wrap(
            what, 79, initial_indent=head.ljust(COLUMN), subsequent_indent=" " * COLUMN
        )
    return "\n".join(lines)
