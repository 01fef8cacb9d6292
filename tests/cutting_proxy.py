"""A TCP proxy on a loopback port that can cut every connection through it at once.

It stands for what sits between a client and a service in production (a load
balancer, a proxy that drops long streams): :meth:`CuttingProxy.cut` closes
every open connection mid-stream, and new connections go through as before.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class CuttingProxy:
    """Forwards ``127.0.0.1:port`` to ``upstream`` until closed."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listening = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listening.getsockname()[1])
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listening.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open |= {client, server}
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(source, sink)

    def _drop(self, *sockets: socket.socket) -> None:
        for sock in sockets:
            with self._lock:
                self._open.discard(sock)
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def cut(self) -> None:
        """Close every connection open through the proxy now."""
        with self._lock:
            live = list(self._open)
        self.cuts += 1
        self._drop(*live)

    def close(self) -> None:
        with suppress(OSError):
            self._listening.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listening.close()
        self.cut()


@contextmanager
def cutting_proxy(url: str) -> Iterator[CuttingProxy]:
    """A proxy to the service at ``url`` (``http://127.0.0.1:PORT``)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    proxy = CuttingProxy((host, int(port)))
    try:
        yield proxy
    finally:
        proxy.close()
