"""`tokspeed web` as a server, through HTTP and signals: bind errors are one line, IPv6 loopback works, 50
clients at once are all served, a vanishing client logs no traceback, Ctrl-C does not wait for a dripping
client, SIGTERM leaves no upload folder behind."""

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")           # the `web` extra

from tokspeed.web.server import BACKLOG, start_in_thread  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tokspeed", "web", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60, **kw)


def one_line_error(r):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_port_in_use_is_one_line():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        line = one_line_error(cli("--port", str(s.getsockname()[1])))
        assert "address already in use" in line.lower() and "another --port" in line
    finally:
        s.close()


def test_unresolvable_host_is_one_line():
    line = one_line_error(cli("--host", "no-such-host.invalid", "--port", "0"))
    assert "does not resolve" in line


def test_bad_port_is_one_line():
    assert "0..65535" in one_line_error(cli("--port", "70000"))


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_ipv6_loopback():
    if not ipv6_loopback():
        line = one_line_error(cli("--host", "::1", "--port", "0"))   # refused clearly where there is no IPv6
        assert "::1" in line
        return
    srv = start_in_thread("::1")
    try:
        assert srv.url.startswith("http://[::1]:")
        with urllib.request.urlopen(srv.url + "api/options", timeout=30) as r:    # Host: [::1]:port
            assert r.status == 200 and "Q4_K_M" in json.loads(r.read())["quant"]
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def server():
    srv = start_in_thread()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_fifty_clients_at_once_are_all_served(server):
    """More clients than worker threads (8) and than socketserver's old backlog (5): none dropped."""
    assert BACKLOG >= 50
    url = server.url + "api/predict?model=llama-3-8b&hardware=rtx-4090&quant=Q4_K_M"
    results = []
    start = threading.Barrier(50)

    def client():
        start.wait()
        try:
            with urllib.request.urlopen(url, timeout=120) as r:
                results.append((r.status, json.loads(r.read())["decode"]["tok_s"]))
        except Exception as e:          # noqa: BLE001 - a dropped connection is what this test looks for
            results.append((type(e).__name__, None))

    threads = [threading.Thread(target=client) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s for s, _ in results] == [200] * 50
    assert len({v for _, v in results}) == 1                # every client got the same answer


def test_costly_request_is_refused_before_work(server):
    q = "model=deepseek-v3&hardware=h100-sxm&prefill=1048576&context=16777216&batch=4096"
    try:
        urllib.request.urlopen(server.url + "api/explain?" + q, timeout=60)
        raise AssertionError("accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 400 and json.loads(e.read())["field"] in ("prompt", "context", "batch")


class WebProcess:
    """`python -m tokspeed web --port 0` in a subprocess with its own TMPDIR; stderr collected."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
        self.p = subprocess.Popen([sys.executable, "-m", "tokspeed", "web", "--port", "0"], cwd=ROOT, env=env,
                                  stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        assert "tokspeed web: http://" in line, line
        self.url = line.split()[2]
        self.port = int(self.url.rstrip("/").rsplit(":", 1)[1])
        # the line comes just before uvicorn starts: wait until it answers, so that a signal sent by a test
        # lands on a serving server (on a loaded 2-core machine startup can take seconds)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "api/options", timeout=10) as r:
                    r.read()
                break
            except OSError:
                if time.monotonic() > deadline or self.p.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self, sig, timeout=20):
        self.p.send_signal(sig)
        self.p.wait(timeout=timeout)                  # generous: the point is that it returns at all
        return self.p.stderr.read()


def test_client_vanishing_mid_response_logs_no_traceback(tmp_path):
    w = WebProcess(tmp_path)
    try:
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", w.port))
            s.sendall(b"GET /api/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # RST, not FIN
            s.close()
            s = socket.create_connection(("127.0.0.1", w.port))
            s.sendall(b"GET /api/predict?model=nope&hardware=x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        with urllib.request.urlopen(w.url + "api/options", timeout=30) as r:       # still serving
            assert r.status == 200
    finally:
        err = w.stop(signal.SIGINT)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_ctrl_c_does_not_wait_for_a_dripping_client(tmp_path):
    w = WebProcess(tmp_path)
    s = socket.create_connection(("127.0.0.1", w.port))
    s.sendall(b"GET /api/models HTTP/1.1\r\nHost: loc")          # and then nothing more
    try:
        err = w.stop(signal.SIGINT)
        assert w.p.returncode in (0, 130) and "Traceback" not in err, err     # 130: interrupted
    finally:
        s.close()


def test_sigterm_removes_the_upload_folder(tmp_path):
    w = WebProcess(tmp_path)
    body = json.dumps({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
                       "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 1000}).encode()
    req = urllib.request.Request(w.url + "api/upload?kind=config", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert json.loads(r.read())["model"].startswith("upload:")
    assert list(tmp_path.glob("tokspeed-web-*/*/*/config.json"))          # stored under TMPDIR
    w.stop(signal.SIGTERM)
    assert not list(tmp_path.glob("tokspeed-web-*"))
