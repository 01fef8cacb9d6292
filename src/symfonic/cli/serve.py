"""``symfonic serve [MODULE:ATTR ...]``: the HTTP service under uvicorn, all agents on one store.

Without API keys it binds loopback only unless ``--insecure``; the store is opened and the
port bound before the start-up line, so any start-up problem is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from symfonic.agent.retention import Retention, parse_age
from symfonic.cli.connections import bounded_protocol
from symfonic.cli.observability import (
    Telemetry,
    export_of,
    flush_on_shutdown,
    install,
    log_config,
)
from symfonic.cli.serve_agents import DEFAULT_AGENT, load_agent, serving_store
from symfonic.cli.serve_banner import startup_line
from symfonic.cli.serve_listen import base_url, is_loopback, listening_socket, port_of
from symfonic.cli.serve_options import (
    add_client_options,
    add_log_options,
    add_serving_options,
    add_sweep_options,
)
from symfonic.cli.serve_webhooks import (
    WEBHOOK_SECRET,
    Served,
    add_webhook_options,
    webhooks_of,
)
from symfonic.cli.serve_workers import supervise
from symfonic.core.contracts.errors import ConfigurationError, StoreUnavailable
from symfonic.server.http.auth import Authenticator
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.pending_pauses_gauge import PendingPauses
from symfonic.storage import masked_url
from symfonic.storage.revision import NO_MIGRATE
from symfonic.storage.sqlite_file import path_of

if TYPE_CHECKING:
    from fastapi import FastAPI

    from symfonic.cli.serve_stop import GracefulServer

# File descriptors kept for what is not a client connection: the store, logs, imports.
RESERVED_FILES = 64


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve agents over HTTP (SSE streams, JSON API)")
    add_serving_options(p)
    add_sweep_options(p)
    add_client_options(p)
    add_webhook_options(p)
    add_log_options(p)
    p.set_defaults(run=run, listener=None)


def cors_origins_of(given: list[str]) -> list[str]:
    """The ``--cors-origin`` values as origins; a malformed one is refused at start-up."""
    # Imported here, as the app is: other commands start sooner without the web stack.
    from symfonic.server.http.cors import origin_of

    return [origin_of(origin) for origin in given]


def retention_of(args: argparse.Namespace) -> Retention | None:
    """The retention ``--retention`` asks for, or ``None`` to keep everything."""
    if args.retention is None:
        if args.keep_answered:
            raise ConfigurationError("--keep-answered needs --retention AGE")
        return None
    return Retention(parse_age(args.retention), keep_answered=args.keep_answered)


def fit_file_limit(max_connections: int) -> int:
    """The connection cap this process can hold, raising its soft file limit if need be."""
    needed = max_connections + RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft - RESERVED_FILES))


def run(args: argparse.Namespace) -> int:
    if args.no_migrate:
        os.environ[NO_MIGRATE] = "1"  # read where the store opens, here and in each worker
    if args.workers > 1:
        return supervise(args, run)
    try:
        authenticator = Authenticator.from_spec(os.environ.get("SYMFONIC_API_KEYS"))
        port = port_of(args.port)
        agents = [load_agent(spec) for spec in args.agents or [DEFAULT_AGENT]]
        retention = retention_of(args)
        cors_origins = cors_origins_of(args.cors_origin)
        webhooks, webhook_settings = webhooks_of(args, os.environ.get(WEBHOOK_SECRET))
        store = serving_store(args.store, agents)
        host = ServiceHost(agents, store)
        telemetry = install(export_of(), os.environ.get("OTEL_SERVICE_NAME") or "symfonic")
    except ConfigurationError as error:
        print(f"symfonic serve: {error}", file=sys.stderr)
        return 2
    if authenticator.open and not is_loopback(args.host) and not args.insecure:
        print(
            f"symfonic serve: refusing to bind {args.host} without API keys: every caller "
            "would be 'local' and could answer every pause. Set SYMFONIC_API_KEYS "
            "(e.g. alice=<key>), bind 127.0.0.1, or pass --insecure.",
            file=sys.stderr,
        )
        return 2
    url = store if isinstance(store, str) else store.url
    try:
        served = Served(retention, webhooks, webhook_settings, cors_origins)
        return anyio.run(_serve, args, port, host, url, authenticator, served, telemetry)
    finally:
        if telemetry is not None:
            telemetry.shutdown()  # the last spans and metrics are flushed before exit


async def _serve(
    args: argparse.Namespace,
    port: int,
    host: ServiceHost,
    url: str,
    authenticator: Authenticator,
    served: Served,
    telemetry: Telemetry | None = None,
) -> int:
    """Open the store and bind the port, then say what is served, then serve, on one loop;
    the ``finally`` closes the host if uvicorn never started (its lifespan would)."""
    try:
        await host.open()
    except Exception as error:
        print(f"symfonic serve: {_unopened(url, error)}", file=sys.stderr)
        return 2
    try:
        try:
            listener = args.listener or listening_socket(args.host, port)
        except ConfigurationError as error:
            print(f"symfonic serve: {error}", file=sys.stderr)
            return 2
        with listener:
            return await _serve_on(listener, args, host, url, authenticator, served, telemetry)
    finally:
        await host.aclose()


async def _serve_on(
    listener: socket.socket,
    args: argparse.Namespace,
    host: ServiceHost,
    url: str,
    authenticator: Authenticator,
    served: Served,
    telemetry: Telemetry | None,
) -> int:
    """Announce what is served on the bound ``listener``, then serve until shut down."""
    port = listener.getsockname()[1]
    max_connections = _announce(args, port, host, url, authenticator, served)
    app = _app(args, host, authenticator, served, telemetry)
    server = _server(app, args, host, (port, max_connections))
    async with anyio.create_task_group() as counting:
        if telemetry is not None and telemetry.metrics:
            pending = PendingPauses()
            pending.register()
            counting.start_soon(pending.keep_counting, host.store)
        await server.serve(sockets=[listener])
        counting.cancel_scope.cancel()
    if host.draining is not None:
        print(server.summary(), file=sys.stderr, flush=True)
    return 0 if server.started else 1


def _announce(
    args: argparse.Namespace,
    port: int,
    host: ServiceHost,
    url: str,
    authenticator: Authenticator,
    served: Served,
) -> int:
    """Print the start-up line; the connection cap the file limit holds, said if lowered."""
    agents = list(host.agents.values())
    max_connections = fit_file_limit(args.max_connections)
    print(
        startup_line(args.host, port, url, agents, authenticator, args.insecure, served.webhooks),
        flush=True,
    )
    site = base_url(args.host, port)
    print(f"symfonic serve: answer pauses at {site}/inbox; API docs at {site}/docs", flush=True)
    if max_connections < args.max_connections:
        print(
            f"symfonic serve: the file limit holds {max_connections} connections, not "
            f"{args.max_connections}; raise it (ulimit -n) for more",
            flush=True,
        )
    return max_connections


def _app(
    args: argparse.Namespace,
    host: ServiceHost,
    authenticator: Authenticator,
    served: Served,
    telemetry: Telemetry | None,
) -> FastAPI:
    """The app the options ask for, traced if telemetry is on."""
    # The app and the server are imported only when serving: every other command
    # (demo, chat, --help) starts about a second sooner without them.
    from symfonic.server.app import create_app

    app = create_app(
        host,
        api_keys=authenticator,
        sweep_interval=args.sweep_interval,
        retention=served.retention,
        webhooks=served.webhooks,
        webhook_settings=served.webhook_settings,
        max_streams_per_principal=args.max_streams_per_principal,
        cors_origins=served.cors_origins,
        run_events_ttl=args.run_events_ttl,
    )
    if telemetry is not None:
        telemetry.instrument(app)
        flush_on_shutdown(app, telemetry)
    freeze_after_startup(app)
    return app


def _server(
    app: FastAPI, args: argparse.Namespace, host: ServiceHost, bound: tuple[int, int]
) -> GracefulServer:
    """uvicorn serving ``app``, every connection bounded (`symfonic.cli.connections`),
    stopping gracefully (`symfonic.cli.serve_stop`)."""
    import uvicorn

    from symfonic.cli.serve_stop import GracefulServer

    port, max_connections = bound
    config = uvicorn.Config(
        app,
        host=args.host,
        port=port,
        log_level=args.log_level,
        log_config=log_config(args.log_format, args.log_level, uvicorn.config.LOGGING_CONFIG),
        timeout_graceful_shutdown=args.grace,
        server_header=False,
        http=bounded_protocol(args.header_timeout, max_connections, app.state.stream_shares),
    )
    return GracefulServer(config, app, host)


def _unopened(url: str, error: Exception) -> str:
    """Why the store would not open, in words, without a traceback."""
    if isinstance(error, ConfigurationError):
        return str(error)
    if isinstance(error, ValueError):  # the driver could not parse the URL
        return (
            f"{masked_url(url)} is not a valid store URL: use sqlite:///path.db or "
            "postgresql://user:password@host:port/db"
        )
    cause: BaseException = error
    if isinstance(error, StoreUnavailable) and error.__cause__ is not None:
        cause = error.__cause__
    cause = getattr(cause, "orig", None) or cause  # SQLAlchemy wraps the driver's error
    reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
    said = f"cannot open the store {masked_url(url)}: {reason or type(cause).__name__}"
    if url.startswith("sqlite"):
        folder = os.path.dirname(os.path.abspath(path_of(url)))
        if not os.path.isdir(folder):
            return f"{said}: the directory {folder} does not exist; create it or change --store"
        return f"{said}. Check --store / SYMFONIC_STORE."
    if "does not exist" in reason and "database" in reason:
        database = urlsplit(url).path.lstrip("/")
        return f"{said}. Create it (createdb {database}) or change --store / SYMFONIC_STORE."
    return f"{said}. Check --store / SYMFONIC_STORE and that the database server is running."


def freeze_after_startup(app: FastAPI) -> None:
    """Once the app has started, take what start-up left (modules, schemas, the pool) out of
    full garbage collections, which would walk it again on some request (docs/internals.md)."""
    started = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with started(app) as state:
            gc.collect()
            gc.freeze()
            yield state

    app.router.lifespan_context = lifespan
