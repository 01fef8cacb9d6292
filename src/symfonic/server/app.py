"""The FastAPI app factory: symfonic's native HTTP API over hosted agents on one store.
Its lifespan runs the sweeper, the live feed, background runs and the webhook dispatcher
under one task group; mounted elsewhere, pass `lifespan=sub.router.lifespan_context` to
the outer app.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta

import anyio
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from symfonic.agent.agent import SymfonicAgent
from symfonic.agent.retention import RUN_EVENTS_TTL, Retention
from symfonic.core.contracts.store import Store
from symfonic.server.agui import router as agui_routes
from symfonic.server.http import (
    openapi,
    routes_audit,
    routes_pause_feed,
    routes_pauses,
    routes_resume,
    routes_runs,
    routes_sessions,
    routes_webhooks,
)
from symfonic.server.http.auth import Authenticator
from symfonic.server.http.cors import install_cors
from symfonic.server.http.key_brake import KeyBrake
from symfonic.server.http.limits import BodyLimit
from symfonic.server.http.redoc import install_redoc
from symfonic.server.http.service import HttpService
from symfonic.server.inbox import install_inbox
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.pause_feed import PauseFeed
from symfonic.server.service.runs import WorkerRuns
from symfonic.server.service.sweeper import (
    SWEEP_INTERVAL,
    seal_audit_periodically,
    sweep_periodically,
)
from symfonic.server.service.webhook_dispatch import WebhookDispatcher
from symfonic.server.service.webhooks import Webhook, WebhookSettings
from symfonic.server.transport import errors
from symfonic.server.transport.stream_shares import DEFAULT_MAX_STREAMS_PER_PRINCIPAL, StreamShares

MAX_BODY_SIZE = 4 << 20
ROUTES = (
    routes_sessions,
    routes_resume,
    routes_runs,
    routes_pause_feed,
    routes_pauses,
    routes_webhooks,
    routes_audit,
    agui_routes,
)

DESCRIPTION = """\
Agent turns that pause for a person and resume exactly once, from any worker.

Authenticate with `Authorization: Bearer <key>`. Turns and resumes stream
Server-Sent Events by default (`event:` the type, `data:` JSON, `id:` a
sequence number); send `Accept: application/json` for the outcome as one body.
Every error is `{"error": {"code", "message"}}`.
"""


def create_app(
    agents: SymfonicAgent | Sequence[SymfonicAgent] | ServiceHost,
    *,
    store: str | Store | None = None,
    api_keys: str | Authenticator | None = None,
    sweep_interval: float = SWEEP_INTERVAL,
    retention: Retention | None = None,
    max_body_size: int = MAX_BODY_SIZE,
    title: str = "symfonic",
    webhooks: Sequence[Webhook] = (),
    webhook_settings: WebhookSettings | None = None,
    max_streams_per_principal: int = DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
    key_brake: KeyBrake | None = None,
    cors_origins: Sequence[str] = (),
    run_events_ttl: timedelta = RUN_EVENTS_TTL,
) -> FastAPI:
    """An app serving ``agents`` (the first is the default) on one store.

    ``store``: a URL or an opened store (default ``SYMFONIC_STORE``, else the
    embedded SQLite file). ``api_keys``: ``"alice=key1,carol=key3:approver"``
    or an `Authenticator` (default ``SYMFONIC_API_KEYS``); with none,
    every caller is the principal ``local``. ``sweep_interval``: seconds between
    sweeps of expired pauses and lapsed claims; 0 turns the sweeper off.
    ``retention``: with one, each sweep also deletes the finished sessions idle
    for longer than it keeps them (default: nothing is ever deleted).
    ``max_body_size``: larger request bodies get a 413. ``webhooks``: the
    subscriptions this worker registers and sends to (docs/webhooks.md), sharing
    ``webhook_settings``. ``max_streams_per_principal``: how many streams one
    principal may hold open at once; one more is a 429 (the app's `StreamShares`
    is ``app.state.stream_shares``). ``key_brake``: how many wrong keys an address
    or a key prefix may present (default: 10, then one every 6 s). ``cors_origins``:
    the browser origins that may call the API with a key, never with the inbox's
    cookie (default: none). ``run_events_ttl``: how long after a run ends its kept
    events are deleted, on each sweep (docs/runs.md).
    """
    host = _host_of(agents, store)
    service = HttpService(
        host, _authenticator(api_keys), StreamShares(max_streams_per_principal), key_brake
    )
    feed = PauseFeed(host)
    dispatcher = WebhookDispatcher(host, webhooks, webhook_settings) if webhooks else None
    sweeping = (sweep_interval, retention, run_events_ttl)
    lifespan = _lifespan(host, (feed, service.runs), dispatcher, sweeping)
    app = _app_with_offline_docs(title, lifespan)
    app.add_middleware(BodyLimit, max_body_size=max_body_size)
    app.state.symfonic = service
    app.state.pause_feed = feed
    app.state.webhooks = dispatcher
    app.state.stream_shares = service.shares
    errors.install(app)
    for routes in ROUTES:
        app.include_router(routes.router)
    install_inbox(app)
    openapi.install(app)
    # Added last, so it is outermost: a preflight is answered before the body
    # limit or authentication see it, and every answer carries its headers.
    install_cors(app, cors_origins)
    return app


def _host_of(
    agents: SymfonicAgent | Sequence[SymfonicAgent] | ServiceHost, store: str | Store | None
) -> ServiceHost:
    if isinstance(agents, ServiceHost):
        if store is not None:
            raise ValueError("pass the store to the ServiceHost, not to create_app")
        return agents
    return ServiceHost([agents] if isinstance(agents, SymfonicAgent) else list(agents), store)


def _authenticator(api_keys: str | Authenticator | None) -> Authenticator:
    if isinstance(api_keys, Authenticator):
        return api_keys
    spec = api_keys if api_keys is not None else os.environ.get("SYMFONIC_API_KEYS")
    return Authenticator.from_spec(spec)


def _lifespan(
    host: ServiceHost,
    watches: tuple[PauseFeed, WorkerRuns],
    dispatcher: WebhookDispatcher | None,
    sweeping: tuple[float, Retention | None, timedelta],
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: the store open, and what runs beside the requests.

    The audit's sealer, the sweeper (unless ``sweep_interval`` is 0), the live feed's
    watch, the background runs and the webhook dispatcher run under one task group;
    shutdown cancels them, then closes the store. A draining host's runs are cancelled
    as a cancel does, and its queued messages handed over, first.
    """
    sweep_interval, retention, run_events_ttl = sweeping
    feed, runs = watches
    expiring_lead = None
    if dispatcher is not None and dispatcher.wants_expiring:
        expiring_lead = dispatcher.settings.expiring_lead

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await host.open()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(seal_audit_periodically, host)
                if sweep_interval > 0:
                    tasks.start_soon(
                        sweep_periodically,
                        host,
                        sweep_interval,
                        retention,
                        expiring_lead,
                        run_events_ttl,
                        runs,
                    )
                await tasks.start(feed.run)
                await tasks.start(runs.run)
                if dispatcher is not None:
                    await tasks.start(dispatcher.run)
                yield
                if (draining := host.draining) is not None:  # runs the grace saw not end
                    draining.runs_cancelled, draining.runs_handed = await runs.cancel_here()
                tasks.cancel_scope.cancel()
            await host.hand_over()
        finally:
            await host.aclose()

    return lifespan


def _app_with_offline_docs(
    title: str, lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]]
) -> FastAPI:
    """An app whose ``/docs`` and ``/redoc`` pages load nothing from another origin."""
    app = FastAPIOffline(
        title=title,
        version=_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        swagger_ui_parameters={"validatorUrl": None},
        redoc_url=None,
    )
    install_redoc(app)
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("symfonic")
    except PackageNotFoundError:
        return "0"
