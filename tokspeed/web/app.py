"""The ASGI application of `tokspeed web` (FastAPI): routes, the typed queries of ``schemas.py``, JSON errors,
the Host check and the security headers. The OpenAPI document is generated from the routes
(``/api/openapi.json``); the page and its vendored chart library are served from ``static/``.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .. import __version__
from ..errors import UserError, did_you_mean
from ..guard.names import host_header
from . import api, schemas
from .errors import ApiError, refusal
from .uploads import UPLOAD_LIMITS, Uploads

STATIC = Path(__file__).parent / "static"
PAGES = {"/": ("index.html", "text/html; charset=utf-8"),
         "/index.html": ("index.html", "text/html; charset=utf-8"),
         "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
         "/static/charts.js": ("charts.js", "text/javascript; charset=utf-8"),
         "/static/serving.js": ("serving.js", "text/javascript; charset=utf-8"),
         "/static/style.css": ("style.css", "text/css; charset=utf-8"),
         "/static/vendor/uPlot.iife.min.js": ("vendor/uPlot.iife.min.js", "text/javascript; charset=utf-8"),
         "/static/vendor/uPlot.min.css": ("vendor/uPlot.min.css", "text/css; charset=utf-8")}
MAX_QUERY = 4096                     # bytes of query string
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")   # Host values (host[:port], checked exactly)
# An upload must say it is a file: a cross-site page can only send text/plain or form types without a CORS
# preflight (which this server never grants), so other origins cannot make it store anything.
UPLOAD_TYPES = ("application/octet-stream", "application/json")
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
                    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'"}
ERRORS = {400: {"model": schemas.Error, "description": "a value over the API's limits, or unknown"},
          404: {"model": schemas.Error, "description": "no such upload"},
          422: {"model": schemas.Error, "description": "a malformed field (named in `field`)"},
          429: {"model": schemas.Error, "description": "costly answers are being computed; ask again after Retry-After"},
          503: {"model": schemas.Error, "description": "a serving search is already running (one at a time)"}}
# Costly answers (the report page: a prediction and its charts, ~1-3 s of CPU; the serving search, 1-4 s) are
# admitted COSTLY_AT_ONCE at a time; the next one is a 429 with Retry-After at once, so the other worker threads
# stay free and cheap answers (/api/models, /api/hardware, a prediction) are never queued behind them.
COSTLY_AT_ONCE = 2
RETRY_AFTER_S = 2
_COSTLY = threading.BoundedSemaphore(COSTLY_AT_ONCE)


@contextlib.contextmanager
def costly(what: str):
    """Admit one costly answer, or refuse it at once with 429 + Retry-After."""
    if not _COSTLY.acquire(blocking=False):
        raise ApiError(429, f"{what}: {COSTLY_AT_ONCE} costly answers are being computed; ask again in "
                            f"{RETRY_AFTER_S} s", retry_after_s=RETRY_AFTER_S)
    try:
        yield
    finally:
        _COSTLY.release()


def error_response(status: int, message: str, field=None, suggestion=None, headers=None) -> JSONResponse:
    doc = {"error": message, "status": status}
    if field:
        doc["field"] = field
    if suggestion:
        doc["suggestion"] = suggestion
    return JSONResponse(doc, status_code=status, headers=headers)


def json_out(doc) -> JSONResponse:
    return JSONResponse(api.finite(doc))


def validation_message(err: dict, known: list[str]) -> tuple[str, str]:
    """One line for pydantic's first complaint about a query, and the field it names."""
    loc = [str(p) for p in err.get("loc", ()) if p not in ("query", "body")]
    field = loc[-1] if loc else "query"
    kind, got, ctx = err.get("type", ""), err.get("input"), err.get("ctx") or {}
    if kind == "extra_forbidden":
        hint = did_you_mean(field, known)
        return f"unknown parameter {field!r}" + (f" ({hint})" if hint else f"; known: {', '.join(known)}"), field
    if kind == "missing":
        return f"which {field}? give {field}=… (see /api/openapi.json)", field
    if kind.startswith("int_"):
        return f"{field} must be a whole number, got {got!r}", field
    if kind.startswith("float_") or kind == "finite_number":
        return f"{field} must be a finite number, got {got!r}", field
    for key, word in (("ge", "at least"), ("gt", "above"), ("le", "at most"), ("lt", "below")):
        if key in ctx:
            return f"{field} must be {word} {ctx[key]}, got {got!r}", field
    if kind == "literal_error":
        return f"{field} must be {ctx.get('expected', 'one of the listed values')}, got {got!r}", field
    return f"{field}: {err.get('msg', 'invalid')}", field


def create_app(uploads: Uploads, loopback_only: bool = True, workers: int = 8) -> FastAPI:
    """The app; ``workers`` bounds the threads computing answers at once (the rest wait in line)."""
    @contextlib.asynccontextmanager
    async def lifespan(app):
        import anyio.to_thread  # lazy: optional dependency (anyio, the web extra)

        anyio.to_thread.current_default_thread_limiter().total_tokens = workers
        try:
            yield
        finally:
            uploads.close()              # on shutdown, before uvicorn re-raises a caught SIGTERM

    app = FastAPI(lifespan=lifespan, title="tokspeed web", version=__version__, openapi_url="/api/openapi.json", docs_url=None,
                  redoc_url=None, description="Predict and explain the cost of one LLM token: the JSON API behind "
                                              "`tokspeed web`. Documents equal the CLI's `--json` output.")

    _add_guard(app, loopback_only)
    _add_error_handlers(app)
    _add_pages(app)
    _add_api(app, uploads)
    _add_upload(app, uploads)
    return app


def _add_guard(app: FastAPI, loopback_only: bool) -> None:
    """Every request: the Host allow-list, no cross-site calls, a bounded query, no repeated parameter."""
    @app.middleware("http")
    async def guard(request: Request, call_next):
        server = request.scope.get("server") or (None, None)
        if not host_header(request.headers.get("host") or "", LOOPBACK_HOSTS if loopback_only else None,
                           server[1]):
            # DNS rebinding: a web page whose name re-resolves to 127.0.0.1 still sends its own name as Host
            resp = error_response(403, "this server answers only to 127.0.0.1 / localhost / [::1] (Host header)"
                                  if loopback_only else "malformed Host header: give host or host:port")
        elif request.url.path.startswith("/api/") and \
                request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            # a page on another site (or another port) the user visits: browsers say so in Sec-Fetch-Site, and
            # such a page must not make this server compute (curl and scripts send no such header)
            resp = error_response(403, "requests from other web pages are refused (Sec-Fetch-Site: "
                                       f"{request.headers.get('sec-fetch-site')})")
        elif len(request.scope.get("query_string", b"")) > MAX_QUERY:
            resp = error_response(414, f"query string longer than {MAX_QUERY} bytes")
        else:
            names = [k for k, _ in parse_qsl(request.url.query, keep_blank_values=True)]
            dup = next((k for k in names if names.count(k) > 1), None)
            if dup:
                resp = error_response(422, f"parameter {dup!r} given {names.count(dup)} times", dup)
            else:
                try:
                    resp = await call_next(request)
                except ClientDisconnect:             # a client that hung up is not a bug
                    resp = error_response(400, "the client disconnected")
                except Exception as exc:             # a bug: say so without leaking a traceback to the client
                    traceback.print_exception(exc, file=sys.stderr)
                    resp = error_response(500, "internal error (a bug in tokspeed; the server log has the details)")
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp


def _add_error_handlers(app: FastAPI) -> None:
    """Every refusal is one JSON line ``{error, status, field?, suggestion?}``."""
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        route = request.scope.get("route")
        known = sorted(p.name for p in getattr(getattr(route, "dependant", None), "query_params", []) or [])
        model_fields = []
        for p in getattr(getattr(route, "dependant", None), "query_params", []) or []:
            ann = getattr(p.field_info, "annotation", None)
            model_fields += list(getattr(ann, "model_fields", {}) or {})
        msg, field = validation_message(exc.errors()[0], sorted(set(known + model_fields)))
        return error_response(422, msg, field)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404:
            return error_response(404, f"no such page or endpoint: {request.url.path}")
        if exc.status_code == 405:
            return error_response(405, f"{request.method} is not allowed on {request.url.path}",
                                  headers=exc.headers)
        return error_response(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(ApiError)
    async def refused(request: Request, exc: ApiError):
        return error_response(exc.status, exc.message, exc.field, exc.suggestion,
                              {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s else None)

    @app.exception_handler(UserError)
    async def user_error(request: Request, exc: UserError):
        e = refusal(exc)
        return error_response(e.status, e.message, e.field, e.suggestion)


def _add_pages(app: FastAPI) -> None:
    """The page and its static files."""
    def page(path: str):
        name, ctype = PAGES[path]

        def serve():
            return Response((STATIC / name).read_bytes(), media_type=ctype)
        return serve

    for path in PAGES:
        app.add_api_route(path, page(path), methods=["GET"], include_in_schema=False)


def _add_api(app: FastAPI, uploads: Uploads) -> None:
    """The JSON API: cheap lookups answered at once, costly answers admitted a few at a time (``costly``)."""
    @app.get("/api/models", response_model=schemas.Models, summary="catalog models")
    def models():
        return api.api_models()

    @app.get("/api/hardware", response_model=schemas.HardwareList, summary="catalog devices")
    def hardware():
        return api.api_hardware()

    @app.get("/api/options", response_model=schemas.Options, summary="quant, KV dtype and engine names; presets")
    def options():
        return api.api_options()

    @app.get("/api/predict", response_model=schemas.Prediction, responses=ERRORS,
             summary="the `tokspeed predict --json` document")
    def predict(q: Annotated[schemas.PredictQuery, Query()]):
        return json_out(api.api_predict(q, uploads))

    @app.get("/api/explain", response_model=schemas.Explanation, responses=ERRORS,
             summary="the `tokspeed explain --json` document")
    def explain(q: Annotated[schemas.ExplainQuery, Query()]):
        return json_out(api.api_explain(q, uploads))

    @app.get("/api/calculator", response_model=schemas.Calculator, responses=ERRORS,
             summary="everything the page shows for one setting (prediction, journey, context curve)")
    def calculator(q: Annotated[schemas.CalculatorQuery, Query()]):
        return json_out(api.api_calculator(q, uploads))

    @app.get("/api/alternatives", response_model=schemas.Alternatives, responses=ERRORS,
             summary="ways a setup that does not fit would run (offload, more GPUs, a smaller format, ...)")
    def alternatives(q: Annotated[schemas.PredictQuery, Query()]):
        return json_out(api.api_alternatives(q, uploads))

    if api.fit_available():                      # `tokspeed fit`'s ranking, where this build has it
        @app.get("/api/fit", response_model=schemas.FitList, responses=ERRORS,
                 summary="what runs here: catalog models ranked on one device (`tokspeed fit --json`)")
        def fit(q: Annotated[schemas.FitQuery, Query()]):
            with costly("the ranking of catalog models"):
                return json_out(api.api_fit(q))

    @app.get("/api/serve", response_model=schemas.Serve, responses=ERRORS,
             summary="serving search: the best configuration of each layout and the frontier (tokspeed serve --json)")
    def serve(q: Annotated[schemas.ServeQuery, Query()]):
        with costly("the serving search"):
            return json_out(api.api_serve(q))

    @app.get("/api/report.html", responses=ERRORS, response_class=Response,
             summary="the `tokspeed report` HTML page for one setting (a download)")
    def report(q: Annotated[schemas.PredictQuery, Query()]):
        with costly("the report page"):
            html = api.api_report(q, uploads)
        return Response(html, media_type="text/html; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="tokspeed-report.html"'})


def _add_upload(app: FastAPI, uploads: Uploads) -> None:
    """POST /api/upload: a config.json or the start of a GGUF, by declared length, read in bounded chunks."""
    @app.post("/api/upload", response_model=schemas.Upload, status_code=200,
              responses={**ERRORS, 411: {"model": schemas.Error}, 413: {"model": schemas.Error},
                         415: {"model": schemas.Error}},
              openapi_extra={"requestBody": {"required": True, "content": {
                  t: {"schema": {"type": "string", "format": "binary"}} for t in UPLOAD_TYPES}}},
              summary="store a config.json or the start of a GGUF; returns model=upload:<id>")
    async def upload(request: Request, q: Annotated[schemas.UploadQuery, Query()]):
        close = {"Connection": "close"}                  # do not read a body we refuse
        ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype not in UPLOAD_TYPES:
            return error_response(415, f"send the file as {' or '.join(UPLOAD_TYPES)}, not "
                                       f"{ctype or 'no Content-Type'}", headers=close)
        length = request.headers.get("content-length")
        if request.headers.get("transfer-encoding", "").lower() == "chunked" or length is None:
            return error_response(411, "send the file with a Content-Length header", headers=close)
        try:
            n = int(length)
        except ValueError:
            return error_response(400, f"bad Content-Length {length!r}", headers=close)
        limit = UPLOAD_LIMITS[q.kind]
        if n < 0 or n > limit:
            return error_response(413, f"upload too large: {n:,} bytes (limit for {q.kind}: {limit:,})",
                                  headers=close)
        data = bytearray()
        try:
            async for chunk in request.stream():
                data += chunk
                if len(data) > limit:
                    return error_response(413, f"upload too large (limit for {q.kind}: {limit:,})", headers=close)
        except ClientDisconnect:             # the client hung up mid-upload: nothing to answer, nothing to log
            return error_response(400, "the client disconnected before the upload ended", headers=close)
        return json_out(await run_in_threadpool(api.api_upload, q, bytes(data), uploads))
