"""How ``symfonic serve`` stops on SIGTERM or Ctrl-C: readiness turns 503 before the listener
closes, work in flight gets the grace, what is left is handed to the other workers, and one
line says so; a second signal stops at once, as a crash would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from types import FrameType

import uvicorn
from fastapi import FastAPI

from symfonic.server.service.host import Draining, ServiceHost

# How long readiness answers 503 while the listener still accepts, so that whoever
# probes it (a load balancer, a test) hears it before connections are refused.
READY_DRAIN = 1.0


class GracefulServer(uvicorn.Server):
    """uvicorn, stopping as the module says, and exiting 0 on the first signal."""

    def __init__(self, config: uvicorn.Config, app: FastAPI, host: ServiceHost) -> None:
        super().__init__(config)
        self._app, self._host = app, host
        self.in_flight = self.cut = self.background = 0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            print(
                "symfonic serve: stopped at once on a second signal; what ran here is "
                "left as after a crash (its claims and leases lapse)",
                file=sys.stderr,
                flush=True,
            )
            os._exit(128 + sig)
        self._host.drain()  # readiness says 503 from now on
        self.in_flight = len(self.server_state.tasks)
        self.background = self._app.state.symfonic.runs.running_here
        self.should_exit = True

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                # Not raised again on the way out, as uvicorn would: the stop was graceful.
                self._captured_signals.clear()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await asyncio.sleep(min(READY_DRAIN, self.config.timeout_graceful_shutdown or 0))
        self.in_flight -= self._app.state.stream_shares.close_for_stop()
        await super().shutdown(sockets)

    async def _wait_tasks_to_complete(self) -> None:
        """Requests and this worker's background runs, until they end or the grace does."""
        runs = self._app.state.symfonic.runs
        try:
            await super()._wait_tasks_to_complete()
            # Polled as uvicorn polls its requests: the runs' ends set no event here.
            while runs.running_here and not self.force_exit:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            self.cut = len(self.server_state.tasks)
            raise

    def summary(self) -> str:
        """The one line a graceful stop ends with."""
        draining = self._host.draining or Draining()
        cancelled_runs, handed = draining.runs_cancelled, draining.runs_handed
        dispatcher = self._app.state.webhooks
        released = 0 if dispatcher is None else dispatcher.released
        grace = self.config.timeout_graceful_shutdown
        return (
            f"symfonic serve: stopped: {_n(max(self.in_flight - self.cut, 0), 'request')} and "
            f"{_n(self.background - cancelled_runs - handed, 'background run')} finished, "
            f"{self.cut} and {cancelled_runs} cancelled after the {grace:g} s grace; handed "
            f"{_n(handed, 'background run')}, {_n(draining.queued, 'queued message')} and "
            f"{_n(released, 'webhook delivery')} to the other workers"
        )


def _n(count: int, noun: str) -> str:
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun[:-1] + 'ies' if noun.endswith('y') else noun + 's'}"
