"""`tokspeed web`: the calculator page and its JSON API (``app.py``) served by uvicorn.

The listening socket is made here, so a port in use, an address this machine does not have or a name that
does not resolve is one line (``UserError``), IPv6 (``--host ::1``) works, and the backlog is a real one.
Requests run on a bounded pool of worker threads (``WORKERS``); one Ctrl-C or SIGTERM stops the server within
``GRACE_S`` even with a client dripping bytes, and the upload folder is removed on the way out.

Routes (the OpenAPI document generated from them is at ``/api/openapi.json``):

    GET  /                       the page (static/index.html, app.js, charts.js, style.css, vendor/uPlot)
    GET  /api/models             catalog models            GET /api/hardware   catalog devices
    GET  /api/options            quant, KV dtype and engine names, presets
    GET  /api/predict?...        the `tokspeed predict --json` document
    GET  /api/explain?...        the `tokspeed explain --json` document
    GET  /api/calculator?...     all the page shows for one setting
    GET  /api/alternatives?...   ways a setup that does not fit would run
    GET  /api/fit?hardware=...   what runs here (`tokspeed fit`)
    GET  /api/report.html?...    the report page, as a download
    POST /api/upload?kind=...    a config.json or GGUF header (size-limited, kept in a temporary folder)
"""

from __future__ import annotations

import atexit
import errno
import ipaddress
import socket
import threading
import time

from ..errors import UserError
from .app import create_app
from .uploads import Uploads

BACKLOG = 1024       # pending connections the kernel queues (socketserver's default of 5 dropped clients)
WORKERS = 8          # threads computing answers at once; more requests wait in line, none is dropped
GRACE_S = 1          # seconds a stopping server gives requests in flight before closing them
KEEP_ALIVE_S = 5     # seconds an idle keep-alive connection is kept


def bind(host: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (IPv4 or IPv6), or a one-line UserError."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0..65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise UserError(f"cannot listen on {host!r}: the name does not resolve ({getattr(e, 'strerror', e)})",
                        "give an address such as 127.0.0.1 or ::1") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
        sock.listen(backlog)
    except OSError as e:
        sock.close()
        hint = {errno.EADDRINUSE: "another program uses this port: try another --port (0 picks a free one)",
                errno.EADDRNOTAVAIL: "this machine has no such address: try 127.0.0.1",
                errno.EAFNOSUPPORT: "this machine has no IPv6: try 127.0.0.1",
                errno.EACCES: "ports below 1024 need privileges: try --port 8765"}.get(e.errno, "try another --port")
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror or e}", hint) from None
    return sock


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"


class Server:
    """The app on a bound socket. ``serve_forever()`` blocks (and handles Ctrl-C / SIGTERM in the main
    thread); ``start_in_thread()`` runs it in the background for tests and notebooks."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8765, verbose: bool = False, workers: int = WORKERS,
                 backlog: int = BACKLOG):
        import uvicorn  # lazy: optional dependency (uvicorn, the web extra)


        self.socket = bind(host, port, backlog)
        self.server_address = self.socket.getsockname()[:2]
        self.uploads = Uploads()
        atexit.register(self.uploads.close)
        self.app = create_app(self.uploads, loopback_only=is_loopback(self.server_address[0]), workers=workers)
        config = uvicorn.Config(self.app, log_level="info" if verbose else "warning", access_log=verbose,
                                backlog=backlog, timeout_graceful_shutdown=GRACE_S, timeout_keep_alive=KEEP_ALIVE_S,
                                server_header=False, lifespan="on", ws="none")
        self.uvicorn = uvicorn.Server(config)
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    def serve_forever(self):
        self.uvicorn.run(sockets=[self.socket])

    def start_in_thread(self) -> "Server":
        self.thread = threading.Thread(target=self.serve_forever, daemon=True, name="tokspeed-web")
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.uvicorn.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.uvicorn.started:
            raise RuntimeError("tokspeed web did not start")
        return self

    def shutdown(self):
        self.uvicorn.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)

    def server_close(self):
        self.socket.close()
        self.uploads.close()


def start_in_thread(host: str = "127.0.0.1", port: int = 0) -> Server:
    """A server on a background thread (tests, notebooks). ``port=0`` picks a free port."""
    return Server(host, port).start_in_thread()
