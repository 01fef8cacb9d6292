"""``symfonic serve --workers N``: N forked workers accept on one listening socket; the supervisor
restarts a worker that dies, and forwards SIGTERM or Ctrl-C to every worker, then waits for them.
A worker whose supervisor dies, even by kill -9, stops as on SIGTERM: no worker serves orphaned.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from types import FrameType

from symfonic.cli.serve_listen import base_url, listening_socket, port_of
from symfonic.core.contracts.errors import ConfigurationError

# A worker that exits with this code could not start (its reason is printed): starting
# another would fail the same way, so the supervisor stops them all.
UNSTARTED = 2
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def supervise(args: argparse.Namespace, work: Callable[[argparse.Namespace], int]) -> int:
    """Bind once, fork ``args.workers`` workers that each ``work`` on the bound socket, keep
    them running, and return once a signal has stopped them all."""
    try:
        listener = listening_socket(args.host, port_of(args.port))
    except ConfigurationError as error:
        print(f"symfonic serve: {error}", file=sys.stderr)
        return UNSTARTED
    count, args.listener, args.workers = args.workers, listener, 1
    workers: dict[int, int] = {}  # pid -> the worker's number
    stopping: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        for pid in workers:
            with suppress(ProcessLookupError):  # it has ended already
                os.kill(pid, signum)

    def start(number: int) -> None:
        pid = _fork(args, work)
        workers[pid] = number
        if stopping:  # the signal came while it was forked
            os.kill(pid, stopping[-1])

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for number in range(count):
        start(number)
    print(
        f"symfonic serve: {count} workers on "
        f"{base_url(args.host, listener.getsockname()[1])}; one that dies is started again",
        flush=True,
    )
    code = 0
    while workers:
        pid, status = os.wait()
        number = workers.pop(pid, -1)
        if number < 0 or stopping:
            continue
        if os.waitstatus_to_exitcode(status) == UNSTARTED:
            code = UNSTARTED
            forward(signal.SIGTERM, None)
            continue
        print(f"symfonic serve: worker {pid} ended ({_said(status)}); starting another", flush=True)
        start(number)
    return code


def _fork(args: argparse.Namespace, work: Callable[[argparse.Namespace], int]) -> int:
    supervisor = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    # Its own process group: a terminal's Ctrl-C reaches the supervisor alone, which
    # forwards it once (a worker takes a second signal as "stop at once").
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _tie_to(supervisor)
    code = UNSTARTED
    try:
        code = work(args)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()  # a bug: said as it is, then this worker is started again
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _tie_to(supervisor: int) -> None:
    """SIGTERM to this worker once ``supervisor`` dies: from the kernel on Linux, else (or if
    it died before the kernel was asked) from a thread that watches the parent's pid."""
    try:
        tied = ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM) == 0
    except (AttributeError, OSError):  # no prctl: not Linux
        tied = False
    if not tied or os.getppid() != supervisor:
        threading.Thread(target=_watch, args=(supervisor,), daemon=True).start()


def _watch(supervisor: int) -> None:
    while os.getppid() == supervisor:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


def _said(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"
