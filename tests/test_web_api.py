"""The JSON API of `tokspeed web`: documents equal the CLI's, and every bad input is a 4xx, never a 500."""

import http.client
import json
import math
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tokspeed.predict import predict
from web_fixtures import tiny_llama_gguf
from tokspeed.web.server import GET_API, POST_API, STATIC, start_in_thread

LLAMA3_8B_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
                    "num_key_value_heads": 8, "vocab_size": 128256, "rope_theta": 500000.0,
                    "max_position_embeddings": 8192, "tie_word_embeddings": False}


@pytest.fixture(scope="module")
def server():
    srv = start_in_thread()
    yield srv
    srv.shutdown()
    srv.server_close()


def call(server, path, params=None, method="GET", body=None, headers=None):
    url = server.url.rstrip("/") + path + ("?" + urlencode(params, doseq=True) if params else "")
    if body is not None and not headers:
        headers = {"Content-Type": "application/octet-stream"}
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def ok_json(server, path, params=None):
    status, ctype, body = call(server, path, params)
    assert status == 200, body
    assert ctype.startswith("application/json")
    return json.loads(body)


BASE = {"model": "llama-3-8b", "hardware": "rtx-4090"}


def test_models_and_hardware(server):
    models = {m["id"]: m for m in ok_json(server, "/api/models")["models"]}
    assert models["llama-3-8b"]["params_b"] == pytest.approx(8.03, abs=0.01)   # Meta: 8.03 B
    hw = {h["id"]: h for h in ok_json(server, "/api/hardware")["hardware"]}
    assert hw["rtx-4090"]["bandwidth_gbps"] == 1008 and hw["h100-sxm"]["memory_gb"] == 80
    opts = ok_json(server, "/api/options")
    assert "Q4_K_M" in opts["quant"] and "q8_0" in opts["kv_dtype"] and "vllm" in opts["engine"]


def test_predict_equals_library(server):
    q = {**BASE, "quant": "AWQ-4B", "context": "4096", "prompt": "256", "gen": "64", "batch": "2", "engine": "vllm"}
    got = ok_json(server, "/api/predict", q)
    want = json.loads(json.dumps(predict("llama-3-8b", "rtx-4090", quant="AWQ-4B", context=4096, prompt=256, gen=64,
                                         batch=2, engine="vllm").to_dict()))
    assert got == want


def test_explain_sums_to_prediction(server):
    d = ok_json(server, "/api/explain", {**BASE, "context": "1024"})
    assert sum(s["seconds"] for s in d["stages"]) == pytest.approx(d["prediction"]["decode"]["ms_per_token"] / 1e3)
    assert [lv["lever"] for lv in d["levers"]] == ["parameters", "quant", "attention", "context"]
    p = ok_json(server, "/api/explain", {**BASE, "prefill": "1024"})
    assert p["mode"] == "prefill" and p["total_s"] == pytest.approx(p["prediction"]["prefill"]["seconds"])


def test_custom_hardware(server):
    d = ok_json(server, "/api/predict", {"model": "llama-3-8b", "hardware": "custom", "bandwidth_gbps": "1000",
                                          "memory_gb": "80", "fp16_tflops": "1000", "engine": "ideal",
                                          "prompt": "0", "gen": "1", "context": "1024"})
    # the seeds' bound: bandwidth ÷ bytes per token (the 0.5 MB of logits the CPU reads cost no GPU time)
    assert d["decode"]["tok_s"] == pytest.approx(1e12 / d["decode"]["bytes_per_token"], rel=1e-4)
    assert d["memory"]["capacity_bytes"] == 80e9


@pytest.mark.parametrize("kind", ["overview", "stages", "context", "memory"])
def test_plots_are_svg(server, kind):
    status, ctype, body = call(server, f"/api/plot/{kind}.svg", BASE)
    assert status == 200 and ctype == "image/svg+xml" and body.lstrip().startswith(b"<svg")


BAD = [
    ("/api/predict", {"hardware": "rtx-4090"}, 400, "which model"),
    ("/api/predict", {"model": "llama-9-8b", "hardware": "rtx-4090"}, 400, "unknown model"),
    ("/api/predict", {"model": "/etc/hosts", "hardware": "rtx-4090"}, 400, "unknown model"),
    ("/api/predict", {"model": "llama-3-8b"}, 400, "which hardware"),
    ("/api/predict", {**BASE, "hardware": "rtx-9999"}, 400, "unknown hardware"),
    ("/api/predict", {**BASE, "hardware": "/etc/x.toml"}, 400, "catalog id"),
    ("/api/predict", {**BASE, "hardware": "local"}, 400, "catalog id"),
    ("/api/predict", {**BASE, "batch": "0"}, 400, "batch must be at least 1"),
    ("/api/predict", {**BASE, "batch": "two"}, 400, "whole number"),
    ("/api/predict", {**BASE, "context": "-1"}, 400, "at least 0"),
    ("/api/predict", {**BASE, "context": "1.5"}, 400, "whole number"),
    ("/api/predict", {**BASE, "context": str(10**12)}, 400, "limit"),
    ("/api/predict", {**BASE, "prompt": str(10**9)}, 400, "limit"),
    ("/api/predict", {**BASE, "quant": "Q9_Z"}, 400, "Q9_Z"),
    ("/api/predict", {**BASE, "engine": "warp-drive"}, 400, "unknown engine"),
    ("/api/predict", {**BASE, "kv_dtype": "f12"}, 400, "KV-cache dtype"),
    ("/api/predict", {**BASE, "contxt": "5"}, 400, "unknown parameter"),
    ("/api/predict", {**BASE, "batch": ["1", "2"]}, 400, "given 2 times"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24"}, 400, "bandwidth_gbps"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24", "bandwidth_gbps": "-5"}, 400, "positive"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "nan", "bandwidth_gbps": "900"}, 400, "memory_gb"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24", "bandwidth_gbps": "inf"}, 400, "bandwidth"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24", "bandwidth_gbps": "9",
                      "fp16_tflops": "x"}, 400, "fp16_tflops"),
    ("/api/predict", {**BASE, "model": "upload:nothex"}, 404, "no upload"),
    ("/api/predict", {**BASE, "model": "upload:" + "0" * 32}, 404, "no upload"),
    ("/api/explain", {**BASE, "prefill": "-3"}, 400, "prefill"),
    ("/api/explain", {**BASE, "prompt": "3"}, 400, "unknown parameter"),
    ("/api/models", {"x": "1"}, 400, "unknown parameter"),
    ("/api/plot/pie.svg", BASE, 404, "no chart"),
    ("/api/plot/stages.svg", {**BASE, "batch": "0"}, 400, "batch"),
    ("/api/nothing", {}, 404, "no such"),
    ("/../../etc/passwd", {}, 404, "no such"),
    ("/static/../server.py", {}, 404, "no such"),
]


@pytest.mark.parametrize("path,params,status,needle", BAD)
def test_bad_input_is_4xx_with_message(server, path, params, status, needle):
    got, ctype, body = call(server, path, params)
    assert got == status, body
    doc = json.loads(body)
    assert doc["status"] == status and needle.lower() in (doc["error"] + doc.get("suggestion", "")).lower()


@pytest.mark.parametrize("method,path,status", [("POST", "/api/predict", 405), ("PUT", "/", 405),
                                                 ("DELETE", "/api/upload", 405), ("GET", "/api/upload", 405),
                                                 ("POST", "/api/nowhere", 404)])
def test_wrong_methods(server, method, path, status):
    got, _, body = call(server, path, method=method, body=b"{}" if method in ("POST", "PUT") else None)
    assert got == status and "error" in json.loads(body)


def test_long_query_is_414(server):
    got, _, _ = call(server, "/api/predict", {**BASE, "quant": "x" * 5000})
    assert got == 414


def raw_post(server, path, headers, body=b""):
    host, port = server.server_address[:2]
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.putrequest("POST", path)
    for k, v in headers.items():
        c.putheader(k, v)
    c.endheaders()
    if body:
        c.send(body)
    r = c.getresponse()
    out = r.status, json.loads(r.read())
    c.close()
    return out


def test_upload_needs_a_file_content_type(server):
    """A cross-site form can send these without a CORS preflight: refused, nothing stored."""
    before = len(server.uploads.files)
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, _, raw = call(server, "/api/upload", method="POST", body=b"{}", headers={"Content-Type": ctype})
        assert status == 415, ctype
    assert len(server.uploads.files) == before


def test_foreign_host_header_is_refused(server):
    host, port = server.server_address[:2]
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", "/api/models", headers={"Host": f"evil.example:{port}"})
    r = c.getresponse()
    assert r.status == 403 and "localhost" in json.loads(r.read())["error"]
    c.request("GET", "/api/models", headers={"Host": f"localhost:{port}"})
    r = c.getresponse()
    assert r.status == 200
    r.read()
    c.close()


OCTET = {"Content-Type": "application/octet-stream"}


def test_upload_limits(server):
    status, doc = raw_post(server, "/api/upload?kind=config", {**OCTET, "Content-Length": str(2 << 20)})
    assert status == 413 and "too large" in doc["error"]                    # refused before reading
    status, doc = raw_post(server, "/api/upload?kind=gguf", {**OCTET, "Content-Length": str(64 << 20)})
    assert status == 413
    status, doc = raw_post(server, "/api/upload", {**OCTET, "Transfer-Encoding": "chunked"}, b"0\r\n\r\n")
    assert status == 411
    status, doc = raw_post(server, "/api/upload", {**OCTET, "Content-Length": "abc"})
    assert status == 400


@pytest.mark.parametrize("kind,body,needle", [
    ("config", b"{not json", "not valid JSON"),
    ("config", b"[1, 2, 3]", "JSON object"),
    ("config", b"\xff\xfe\x00", "not valid JSON"),
    ("config", json.dumps({"hidden_size": 4096}).encode(), "lacks"),
    ("config", json.dumps({**LLAMA3_8B_CONFIG, "num_key_value_heads": 5}).encode(), "multiple"),
    ("config", json.dumps({**LLAMA3_8B_CONFIG, "rope_theta": "fast"}).encode(), "cannot read"),
    ("gguf", b"not a gguf file at all", "gguf"),
    ("zip", b"PK", "unknown upload kind"),
])
def test_bad_uploads(server, kind, body, needle):
    n_before = len(server.uploads.files)
    status, _, raw = call(server, "/api/upload", {"kind": kind}, method="POST", body=body)
    assert status == 400, raw
    assert needle.lower() in json.loads(raw)["error"].lower()
    assert len(server.uploads.files) == n_before                             # nothing kept


def test_upload_config_then_predict(server):
    status, _, raw = call(server, "/api/upload", {"kind": "config"}, method="POST",
                          body=json.dumps({**LLAMA3_8B_CONFIG, "_name_or_path": "../../meta-llama/My Llama"}).encode())
    assert status == 200, raw
    up = json.loads(raw)
    assert up["model"].startswith("upload:") and up["n_layers"] == 32
    assert up["params_b"] == pytest.approx(8.03, abs=0.01)
    stored = server.uploads.path(up["model"])
    assert Path(server.uploads.dir) in stored.parents                        # inside the private temp folder
    assert up["name"] == "My-Llama"                                          # a safe name, no path parts
    got = ok_json(server, "/api/predict", {**BASE, "model": up["model"]})
    want = predict("llama-3-8b", "rtx-4090").to_dict()
    assert got["decode"]["tok_s"] == pytest.approx(want["decode"]["tok_s"])
    assert got["memory"]["weights_bytes"] == want["memory"]["weights_bytes"]
    server.uploads.remove(up["model"])
    assert not stored.exists() and not stored.parent.parent.exists()


def test_openapi_documents_every_route(server):
    doc = ok_json(server, "/api/openapi.json")
    assert doc["openapi"].startswith("3.")
    paths = set(doc["paths"])
    assert set(GET_API) | POST_API | {"/api/plot/{kind}.svg"} <= paths
    pred_params = {p["name"] for p in doc["paths"]["/api/predict"]["get"]["parameters"]}
    assert {"model", "hardware", "quant", "kv_dtype", "engine", "prompt", "gen", "context", "batch"} <= pred_params


def test_page_is_offline():
    for name in ("index.html", "app.js", "style.css"):
        text = (STATIC / name).read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text


def test_no_nan_in_json(server):
    d = ok_json(server, "/api/predict", {**BASE, "prompt": "0", "gen": "0"})
    def walk(x):
        if isinstance(x, float):
            assert math.isfinite(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
    walk(d)


def test_cli_web_bad_port():
    r = subprocess.run([sys.executable, "-m", "tokspeed", "web", "--port", "70000"], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_upload_gguf_header_with_declared_size(server, tmp_path):
    pytest.importorskip("tokspeed.files.loader")
    path = tiny_llama_gguf(tmp_path / "tiny-llama.gguf")
    from tokspeed.files.loader import open_model_file

    full = open_model_file(path)
    data = path.read_bytes()
    header = data[:full.gguf.data_offset]                     # what the page sends: the start of the file
    assert len(header) < len(data)
    status, _, raw = call(server, "/api/upload", {"kind": "gguf", "name": "tiny-llama", "size": str(len(data))},
                          method="POST", body=header)
    assert status == 200, raw
    up = json.loads(raw)
    assert up["n_layers"] == 2 and up["params_b"] == pytest.approx(full.spec.n_params / 1e9, abs=1e-3)
    got = ok_json(server, "/api/predict", {**BASE, "model": up["model"]})
    want = predict(str(path), "rtx-4090").to_dict()
    assert got["memory"]["weights_bytes"] == want["memory"]["weights_bytes"]       # the file's exact bytes
    assert got["decode"]["tok_s"] == pytest.approx(want["decode"]["tok_s"])
    stored = server.uploads.path(up["model"])
    assert stored.stat().st_size == len(data)
    # without the declared size the header alone does not read (tensor data would lie past its end)
    status, _, raw = call(server, "/api/upload", {"kind": "gguf"}, method="POST", body=header)
    assert status == 400 and "truncated" in json.loads(raw)["error"]


@pytest.mark.parametrize("params,needle", [({"kind": "gguf", "size": "-1"}, "size must be between"),
                                           ({"kind": "gguf", "size": str(1 << 50)}, "size must be between"),
                                           ({"kind": "gguf", "size": "big"}, "whole number"),
                                           ({"kind": "config", "size": "100"}, "kind=gguf")])
def test_bad_declared_size(server, params, needle):
    status, _, raw = call(server, "/api/upload", params, method="POST", body=b"GGUF" + b"\0" * 20)
    assert status == 400 and needle in json.loads(raw)["error"]
