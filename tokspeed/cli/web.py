"""`tokspeed web [--host H] [--port N]`: the calculator page and JSON API on this machine."""

from __future__ import annotations

import sys

from ..errors import UserError


def add_parser(sub):
    p = sub.add_parser("web", help="a local web calculator with a JSON API (/api/predict, /api/explain ...)",
                       description="Serve the tokspeed calculator page and its JSON API (OpenAPI at "
                                   "/api/openapi.json). Works offline; binds 127.0.0.1 unless told otherwise "
                                   "(--host ::1 for IPv6 loopback).")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--verbose", action="store_true", help="log every request on stderr")
    return p


def run(args) -> int:

    try:
        import fastapi  # noqa: F401  # lazy: optional dependency (fastapi, the web extra)
        import uvicorn  # noqa: F401  # lazy: optional dependency (uvicorn, the web extra)

        from ..web.server import Server, is_loopback  # lazy: optional dependency (fastapi, the web extra)
    except ImportError as e:
        raise UserError(f"tokspeed web needs {e.name}", "pip install 'tokspeed[web]'") from None

    srv = Server(args.host, args.port, verbose=args.verbose)       # a bad host or port: one UserError line
    if not is_loopback(srv.server_address[0]):
        sys.stderr.write(f"warning: listening on {args.host}: anyone who can reach this address can use it\n")
    sys.stderr.write(f"tokspeed web: {srv.url}  (Ctrl-C to stop)\n")
    sys.stderr.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:          # uvicorn re-raises the Ctrl-C it handled, after a clean shutdown
        pass
    finally:
        srv.server_close()
    return 0
