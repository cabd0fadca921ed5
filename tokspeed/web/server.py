"""`tokspeed web`: a local calculator page and its JSON API on the standard library's ThreadingHTTPServer.

Routes (documented in ``static/openapi.json``, served at ``/api/openapi.json``):

    GET  /                      the page (static/index.html, app.js, style.css — nothing from a CDN)
    GET  /api/models            catalog models            GET /api/hardware   catalog devices
    GET  /api/options           quant, KV dtype and engine names
    GET  /api/predict?...       the `tokspeed predict --json` document
    GET  /api/explain?...       the `tokspeed explain --json` document
    GET  /api/plot/KIND.svg?... a chart (overview, stages, context, memory)
    POST /api/upload?kind=...   a config.json or GGUF header (size-limited, kept in a temporary folder)
"""

from __future__ import annotations

import json
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..errors import UserError
from . import api

STATIC = Path(__file__).parent / "static"
PAGES = {"/": ("index.html", "text/html; charset=utf-8"),
         "/index.html": ("index.html", "text/html; charset=utf-8"),
         "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
         "/static/style.css": ("style.css", "text/css; charset=utf-8"),
         "/api/openapi.json": ("openapi.json", "application/json")}
GET_API = {"/api/models": api.api_models, "/api/hardware": api.api_hardware, "/api/options": api.api_options,
           "/api/predict": api.api_predict, "/api/explain": api.api_explain}
POST_API = {"/api/upload"}
MAX_QUERY = 4096                     # bytes of query string
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# An upload must say it is a file: a cross-site page can only send text/plain or form types without a CORS
# preflight (which this server never grants), so other origins cannot make it store anything.
UPLOAD_TYPES = ("application/octet-stream", "application/json")
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'"}


class Handler(BaseHTTPRequestHandler):
    server_version = "tokspeed"
    protocol_version = "HTTP/1.1"
    timeout = 5                   # seconds an idle keep-alive connection may hold its thread

    # -- plumbing ---------------------------------------------------------------------------------
    def log_message(self, fmt, *args):           # quiet unless asked
        if getattr(self.server, "verbose", False):
            super().log_message(fmt, *args)

    def send(self, status: int, body: bytes, ctype: str, extra: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status: int, obj):
        self.send(status, json.dumps(api.finite(obj), indent=1).encode(), "application/json")

    def send_error_json(self, status: int, message: str, suggestion: str | None = None, extra=None):
        doc = {"error": message, "status": status}
        if suggestion:
            doc["suggestion"] = suggestion
        self.send(status, json.dumps(doc).encode(), "application/json", extra)

    def parsed(self):
        parts = urlsplit(self.path)
        if len(parts.query) > MAX_QUERY:
            raise api.ApiError(414, f"query string longer than {MAX_QUERY} bytes")
        try:
            params = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False, max_num_fields=64)
        except ValueError as e:
            raise api.ApiError(400, f"bad query string: {e}") from None
        return parts.path, params

    def host_ok(self) -> bool:
        """On a loopback address, answer only requests addressed to a loopback name (DNS rebinding:
        a web page whose name re-resolves to 127.0.0.1 still sends its own name as Host)."""
        if self.server.server_address[0] not in LOOPBACK and self.server.server_address[0] != "localhost":
            return True
        host = (self.headers.get("Host") or "").strip().lower()
        name = host[1:host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
        return name in LOOPBACK

    def guarded(self, fn):
        try:
            if not self.host_ok():
                raise api.ApiError(403, "this server answers only to 127.0.0.1 / localhost (Host header)")
            fn()
        except (BrokenPipeError, ConnectionResetError):    # the client went away (a replaced <img> src)
            self.close_connection = True
        except api.ApiError as e:
            self.send_error_json(e.status, e.message)
        except UserError as e:
            self.send_error_json(400, e.message, e.suggestion)
        except Exception:                        # a bug: say so without leaking a traceback to the client
            traceback.print_exc(file=sys.stderr)
            try:
                self.send_error_json(500, "internal error (a bug in tokspeed; the server log has the details)")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    # -- methods ----------------------------------------------------------------------------------
    def do_GET(self):
        self.guarded(self._get)

    def do_HEAD(self):
        self.guarded(self._get)

    def do_POST(self):
        self.guarded(self._post)

    def _not_allowed(self):
        path = urlsplit(self.path).path
        allowed = "POST" if path in POST_API else "GET, HEAD"
        self.send_error_json(405, f"{self.command} is not allowed on {path}", extra={"Allow": allowed})

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _get(self):
        path, params = self.parsed()
        if path in PAGES:
            name, ctype = PAGES[path]
            return self.send(200, (STATIC / name).read_bytes(), ctype)
        if path in GET_API:
            return self.send_json(200, GET_API[path](params, self.server.uploads))
        if path.startswith("/api/plot/") and path.endswith(".svg"):
            kind = path[len("/api/plot/"):-len(".svg")]
            svg = api.api_plot(kind, params, self.server.uploads)
            return self.send(200, svg.encode(), "image/svg+xml")
        if path in POST_API:
            return self._not_allowed()
        raise api.ApiError(404, f"no such page or endpoint: {path}")

    def _post(self):
        path, params = self.parsed()
        if path not in POST_API:
            return self._not_allowed() if path in GET_API or path in PAGES else self.send_error_json(
                404, f"no such endpoint: {path}")
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in UPLOAD_TYPES:
            self.close_connection = True
            raise api.ApiError(415, f"send the file as {' or '.join(UPLOAD_TYPES)}, not {ctype or 'no Content-Type'}")
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked" or length is None:
            self.close_connection = True
            raise api.ApiError(411, "send the file with a Content-Length header")
        try:
            n = int(length)
        except ValueError:
            self.close_connection = True
            raise api.ApiError(400, f"bad Content-Length {length!r}") from None
        kind = api.one(params, "kind", "config")
        limit = api.UPLOAD_LIMITS.get(kind, max(api.UPLOAD_LIMITS.values()))
        if n < 0 or n > limit:
            self.close_connection = True         # do not read a body we refuse
            raise api.ApiError(413, f"upload too large: {n:,} bytes (limit for {kind}: {limit:,})")
        data = self.rfile.read(n)
        self.send_json(200, api.api_upload(params, data, self.server.uploads))


class Server(ThreadingHTTPServer):
    # Request threads are joined on server_close (not daemon threads killed at interpreter exit: a
    # thread killed inside matplotlib's C++ code aborts the whole process). Handlers speak HTTP/1.0
    # with a socket timeout, so no thread can wait forever on an idle connection.
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", port: int = 8765, verbose: bool = False):
        super().__init__((host, port), Handler)
        self.uploads = api.Uploads()
        self.verbose = verbose

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    def server_close(self):
        super().server_close()
        self.uploads.close()


def start_in_thread(host: str = "127.0.0.1", port: int = 0) -> Server:
    """A server on a background thread (tests, notebooks). ``port=0`` picks a free port."""
    import threading

    srv = Server(host, port)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
