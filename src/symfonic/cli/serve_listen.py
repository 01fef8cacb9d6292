"""Where ``symfonic serve`` listens: the port bound before the start-up line, so what it
announces is held; a port out of range, taken or not permitted is one line and exit code 2.
"""

from __future__ import annotations

import errno
import ipaddress
import socket

from symfonic.core.contracts.errors import ConfigurationError

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
HIGHEST_PORT = 65535
BACKLOG = 2048  # uvicorn's default


def port_of(text: str) -> int:
    """``--port`` as a number from 0 (any free port) to 65535."""
    if not text.isdigit() or int(text) > HIGHEST_PORT:
        raise ConfigurationError(
            f"--port {text} is not a port: use a whole number from 1 to {HIGHEST_PORT} "
            "(or 0 for any free port)"
        )
    return int(text)


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, as uvicorn would bind it, or why it cannot be."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP by name: asyncio sets TCP_NODELAY on the connections it accepts
    # only from a socket that says so, and without it each response on a kept-alive
    # connection waits for the client's delayed acknowledgement (about 40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        # Listening at once: a client that connects while the app starts waits in
        # the backlog instead of being refused by an address already announced.
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        raise ConfigurationError(_unbound(host, port, error)) from None
    sock.set_inheritable(True)
    return sock


def _unbound(host: str, port: int, error: OSError) -> str:
    where = f"cannot listen on {base_url(host, port)}"
    if isinstance(error, socket.gaierror):
        return (
            f"{where}: {host} is not an address this machine can find ({error.strerror}); "
            "pass --host with one of its addresses"
        )
    if error.errno == errno.EADDRINUSE:
        return (
            f"{where}: another process is already listening on port {port}; stop it, or "
            "pass --port with a free port"
        )
    if error.errno == errno.EACCES:
        return (
            f"{where}: permission denied (ports below 1024 need privileges); pass --port "
            "1024 or above"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{where}: this machine has no address {host}; pass --host with one it has"
    return f"{where}: {error.strerror or error}"
