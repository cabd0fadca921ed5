"""A hostile LLM server and hub on 127.0.0.1 (stdlib threads), for the guard tests (issue 26).

POST (bench-server requests): the ``model`` field picks the behaviour. GET: ``props`` (set on the instance)
picks what ``/props`` does. Every behaviour ends when the client hangs up or the server stops, so a test
that runs the client in a subprocess with a time limit bounds everything.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def event(text: str, finish=None, usage=None) -> bytes:
    obj = {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class HostileServer:
    def __init__(self, props: str = "echo"):
        self.props = props
        self.stop = threading.Event()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _start(self, status=200, ctype="text/event-stream", length=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Connection", "close")
                if length is not None:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def _send(self, data: bytes) -> bool:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                    return not srv.stop.is_set()
                except OSError:
                    return False

            def do_GET(self):
                auth = self.headers.get("Authorization", "")
                if self.path != "/props":
                    self._start(404, "application/json", 2)
                    self._send(b"{}")
                    return
                if srv.props == "echo":      # a server that echoes the request's headers back
                    body = json.dumps({"build_info": f"b1 got Authorization: {auth}", "total_slots": 1,
                                       "model_path": f"/m/{auth}.gguf", "authorization": auth}).encode()
                    self._start(200, "application/json", len(body))
                    self._send(body)
                elif srv.props == "huge":    # 300 MB of JSON, streamed in 1 MiB pieces
                    self._start(200, "application/json", 300 * 2**20)
                    piece = b" " * 2**20
                    for _ in range(300):
                        if not self._send(piece):
                            return
                elif srv.props == "drip":    # one byte a second, forever
                    self._start(200, "application/json", 10**9)
                    while self._send(b" "):
                        time.sleep(1)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                auth = self.headers.get("Authorization", "")
                mode = body.get("model", "ok")
                if mode == "gzip_blank":     # 47 KB of gzip that inflates to 48 MiB of blank lines, then an answer
                    import gzip

                    data = gzip.compress(b"\n" * (48 * 2**20) + b"".join(
                        event("t", "length" if i == 3 else None) for i in range(4)) + b"data: [DONE]\n\n")
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self._send(data)
                    return
                self._start()
                if mode == "ok":
                    for i in range(4):
                        self._send(event("t", "length" if i == 3 else None))
                    self._send(b"data: [DONE]\n\n")
                elif mode == "echo_error":   # the key echoed in an error event
                    self._send(event("t"))
                    self._send(b'data: {"error": {"message": "bad key ' + auth.encode() + b'"}}\n\n')
                elif mode == "formula":     # spreadsheet formulas in server text that reaches the CSV
                    self._send(event("t"))
                    self._send(b'data: {"error": {"message": "=HYPERLINK(\\"http://evil.example\\")"}}\n\n')
                elif mode == "fast_forever":  # valid chunks without pause, each claiming a million tokens
                    done = 0
                    while True:
                        done += 10**6
                        if not self._send(event("t", usage={"prompt_tokens": 1, "completion_tokens": done})):
                            return
                elif mode in ("long_line", "long_line_between"):  # one 200 MB line, in 1 MiB pieces
                    self._send(event("t"))
                    piece = b"x" * 2**20
                    self._send(b"data: ")
                    for _ in range(200):
                        if not self._send(piece):
                            return
                    if mode == "long_line_between":  # ...ended, then a valid answer goes on
                        self._send(b"\n\n")
                        for i in range(3):
                            self._send(event("u", "length" if i == 2 else None))
                        self._send(b"data: [DONE]\n\n")

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"

    def __enter__(self):
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.http.shutdown()
        self.http.server_close()
