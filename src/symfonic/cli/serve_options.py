"""``symfonic serve``'s options; each malformed value is refused by the parser in one line,
before anything starts.
"""

from __future__ import annotations

import argparse
import os
from datetime import timedelta

from symfonic.agent.retention import RUN_EVENTS_TTL, parse_age
from symfonic.cli.connections import DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS
from symfonic.cli.observability import LOG_FORMS
from symfonic.cli.serve_agents import DEFAULT_AGENT
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.server.service.sweeper import SWEEP_INTERVAL
from symfonic.server.transport.stream_shares import DEFAULT_MAX_STREAMS_PER_PRINCIPAL
from symfonic.storage import DEFAULT_STORE

GRACE = "SYMFONIC_GRACE"
DEFAULT_GRACE = 30


def add_serving_options(p: argparse.ArgumentParser) -> None:
    """What is served, where, and on which store."""
    p.add_argument(
        "agents",
        nargs="*",
        metavar="MODULE:ATTR",
        help=f"agents to serve, the first is the default (default: {DEFAULT_AGENT})",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument(
        "--port", default="8000", help="port to bind, 1-65535; 0: any free port (default: 8000)"
    )
    p.add_argument(
        "--store",
        help="store URL for every agent served (default: SYMFONIC_STORE, else the store "
        f"the agents declare, else {DEFAULT_STORE})",
    )
    p.add_argument(
        "--workers",
        type=_at_least_one,
        default=1,
        help="worker processes serving one port, each with its own sweeps; one that dies is "
        "started again (default: 1)",
    )
    p.add_argument(
        "--no-migrate",
        action="store_true",
        help="refuse to start on a store older than this version instead of migrating it "
        "(run `symfonic migrate` first; also SYMFONIC_NO_MIGRATE=1)",
    )
    p.add_argument(
        "--grace",
        type=_whole_seconds,
        default=os.environ.get(GRACE, str(DEFAULT_GRACE)),  # parsed as the flag is
        help=f"on SIGTERM or Ctrl-C, seconds the turns, resumes and background runs in flight "
        f"have to finish before they are cancelled (default: {GRACE}, else {DEFAULT_GRACE})",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback address without API keys (everyone is 'local')",
    )


def add_sweep_options(p: argparse.ArgumentParser) -> None:
    """How often expired pauses are swept, and what each sweep deletes."""
    p.add_argument(
        "--sweep-interval",
        type=float,
        default=SWEEP_INTERVAL,
        help=f"seconds between sweeps of expired pauses and lapsed claims (default: "
        f"{SWEEP_INTERVAL:g}; 0 disables)",
    )
    p.add_argument(
        "--retention",
        metavar="AGE",
        help="delete finished sessions idle for longer than AGE (e.g. 30d) on every sweep "
        "(default: keep everything)",
    )
    p.add_argument(
        "--run-events-ttl",
        metavar="AGE",
        type=_age,
        default=RUN_EVENTS_TTL,
        help="delete a run's kept events AGE after it ends, on every sweep (default: 1h)",
    )
    p.add_argument(
        "--keep-answered",
        action="store_true",
        help="with --retention, keep answered pauses' rows as an audit",
    )


def add_client_options(p: argparse.ArgumentParser) -> None:
    """What a client may hold open, and which browser origins may call."""
    p.add_argument(
        "--header-timeout",
        type=_positive,
        default=DEFAULT_HEADER_TIMEOUT,
        help=f"seconds a request's headers may take to arrive, however they trickle in "
        f"(default: {DEFAULT_HEADER_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-connections",
        type=_at_least_one,
        default=DEFAULT_MAX_CONNECTIONS,
        help=f"open connections at most; past it a new one displaces the oldest idle feed "
        f"of the principal holding the most streams, or the connection waiting longest for "
        f"headers (default: {DEFAULT_MAX_CONNECTIONS})",
    )
    p.add_argument(
        "--max-streams-per-principal",
        type=_at_least_one,
        default=DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
        help=f"streams (pause feeds, turn and AG-UI streams) one principal may hold open; "
        f"one more is a 429 (default: {DEFAULT_MAX_STREAMS_PER_PRINCIPAL})",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin (e.g. https://app.example) that may call the API, /v1/agui and "
        "the feed with a key; repeatable (default: none, same-origin only)",
    )


def add_log_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-level", default="info", help="uvicorn log level (default: info)")
    p.add_argument(
        "--log-format",
        choices=LOG_FORMS,
        default="text",
        help="log lines as text, or one JSON object a line with trace ids (default: text)",
    )


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def _age(text: str) -> timedelta:
    try:
        return parse_age(text)
    except ConfigurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _whole_seconds(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text} is not a whole number of seconds")
    return int(text)


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number of at least 1")
    return int(text)
