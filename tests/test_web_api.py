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

pytest.importorskip("fastapi")           # the `web` extra

from tokspeed.predict import predict  # noqa: E402
from web_fixtures import tiny_llama_gguf  # noqa: E402
from tokspeed.web.app import STATIC  # noqa: E402
from tokspeed.web.server import start_in_thread  # noqa: E402

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
    want.setdefault("hypothetical", False)           # PRODUCT.md: top-level "hypothetical" (it fits here)
    assert got == want


def test_engine_build_and_flash_attention_reach_every_prediction(server):
    # the engine's build and llama.cpp -fa: the same numbers as the library, in the prediction, the journey and
    # the context curve (a 2024 build at 8K of context runs its attention unfused unless asked)
    q = {**BASE, "quant": "Q4_K_M", "context": "8192", "prompt": "0", "gen": "16", "engine_version": "b3000"}
    for fa, want_fa in (("auto", False), ("on", True), ("off", False)):
        got = ok_json(server, "/api/calculator", {**q, "flash_attn": fa})
        want = predict("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192, prompt=0, gen=16,
                       engine_version="b3000", **({} if fa == "auto" else {"flash_attention": fa == "on"}))
        pred = got["prediction"]
        assert pred["engine_version"] == "2024" and pred["flash_attention"] is want_fa
        assert pred["decode"]["tok_s"] == pytest.approx(want.decode.tok_s)
        assert got["explanation"]["prediction"]["flash_attention"] is want_fa
        curve = {c["context"]: c["tok_s"] for c in got["context_curve"]}
        assert curve[8192] == pytest.approx(predict("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192, prompt=0,
                                                    gen=1, engine_version="b3000",
                                                    **({} if fa == "auto" else {"flash_attention": fa == "on"})
                                                    ).decode.tok_s)


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
    assert d["memory"]["capacity_bytes"] == 80 * 2**30            # memory_gb is GiB, as the catalog


BAD = [
    # 400: unknown names, values over the API's limits
    ("/api/predict", {"model": "llama-9-8b", "hardware": "rtx-4090"}, 400, "unknown model"),
    ("/api/predict", {"model": "/etc/hosts", "hardware": "rtx-4090"}, 400, "unknown model"),
    ("/api/predict", {**BASE, "hardware": "rtx-9999"}, 400, "unknown hardware"),
    ("/api/predict", {**BASE, "hardware": "/etc/x.toml"}, 400, "catalog id"),
    ("/api/predict", {**BASE, "hardware": "local"}, 400, "catalog id"),
    ("/api/predict", {**BASE, "context": str(10**12)}, 400, "limit for llama-3-8b: 131,072"),  # window 8,192 < 128K
    ("/api/predict", {**BASE, "context": "130500"}, 400, "at most 130,432 tokens of context"),  # 131,072 − 512 − 128
    ("/api/predict", {**BASE, "prompt": str(10**9)}, 400, "limit of 131,072"),
    ("/api/predict", {**BASE, "batch": "5000"}, 400, "limit of 4,096"),
    ("/api/explain", {"model": "deepseek-v3", "hardware": "h100-sxm", "prefill": "1048576", "context": "16777216",
                      "batch": "4096"}, 400, "limit"),
    ("/api/explain", {"model": "deepseek-v3", "hardware": "h100-sxm", "context": "16777216"}, 400,
     "limit for deepseek-v3: 163,840"),
    ("/api/alternatives", {**BASE, "prompt": "40000"}, 400, "prompts up to 32,768"),
    ("/api/predict", {**BASE, "quant": "Q9_Z"}, 400, "Q9_Z"),
    ("/api/predict", {**BASE, "engine": "warp-drive"}, 400, "unknown engine"),
    ("/api/predict", {**BASE, "kv_dtype": "f12"}, 400, "KV-cache dtype"),
    ("/api/predict", {**BASE, "engine": "vllm", "flash_attn": "off"}, 400, "llama.cpp setting"),
    ("/api/predict", {**BASE, "engine_version": "2023-10", "flash_attn": "on"}, 400, "no FlashAttention"),
    ("/api/predict", {**BASE, "engine_version": "yesterday"}, 400, "build number"),
    ("/api/predict", {**BASE, "flash_attn": "maybe"}, 422, "flash_attn"),
    ("/api/fit", {"hardware": "rtx-4090", "engine": "vllm", "flash_attn": "off"}, 400, "llama.cpp setting"),
    # 422: a malformed field, named
    ("/api/predict", {"hardware": "rtx-4090"}, 422, "which model"),
    ("/api/predict", {"model": "llama-3-8b"}, 422, "which hardware"),
    ("/api/predict", {**BASE, "batch": "0"}, 422, "batch must be at least 1"),
    ("/api/predict", {**BASE, "batch": "two"}, 422, "whole number"),
    ("/api/predict", {**BASE, "context": "-1"}, 422, "at least 0"),
    ("/api/predict", {**BASE, "context": "1.5"}, 422, "whole number"),
    ("/api/predict", {**BASE, "contxt": "5"}, 422, "unknown parameter 'contxt' (did you mean context"),
    ("/api/predict", {**BASE, "batch": ["1", "2"]}, 422, "given 2 times"),
    ("/api/predict", {**BASE, "gpus": "0"}, 422, "gpus must be at least 1"),
    ("/api/predict", {**BASE, "offload": "half"}, 422, "offload must be"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24"}, 422, "bandwidth_gbps"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24", "bandwidth_gbps": "-5"}, 422, "above 0"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "nan", "bandwidth_gbps": "900"}, 422, "memory_gb"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24", "bandwidth_gbps": "inf"}, 422, "bandwidth"),
    ("/api/predict", {**BASE, "hardware": "custom", "memory_gb": "24", "bandwidth_gbps": "9",
                      "fp16_tflops": "x"}, 422, "fp16_tflops"),
    ("/api/explain", {**BASE, "prefill": "-3"}, 422, "prefill"),
    ("/api/explain", {**BASE, "prompt": "3"}, 422, "unknown parameter"),
    ("/api/calculator", {**BASE, "explain": "both"}, 422, "explain must be"),
    # 404: nothing there
    ("/api/predict", {**BASE, "model": "upload:nothex"}, 404, "no upload"),
    ("/api/predict", {**BASE, "model": "upload:" + "0" * 32}, 404, "no upload"),
    ("/api/plot/stages.svg", BASE, 404, "no such"),
    ("/api/nothing", {}, 404, "no such"),
    ("/../../etc/passwd", {}, 404, "no such"),
    ("/static/../server.py", {}, 404, "no such"),
    ("/static/vendor/../../api.py", {}, 404, "no such"),]


@pytest.mark.parametrize("path,params,status,needle", BAD)
def test_bad_input_is_4xx_with_message(server, path, params, status, needle):
    got, ctype, body = call(server, path, params)
    assert got == status, body
    doc = json.loads(body)
    assert doc["status"] == status and needle.lower() in (doc["error"] + doc.get("suggestion", "")).lower()
    if status == 422:
        assert doc["field"] in doc["error"] or doc["field"] == "query"          # the field is named


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
    raw = r.read()
    out = r.status, json.loads(raw) if r.getheader("Content-Type", "").startswith("application/json") else raw
    c.close()
    return out


def test_upload_needs_a_file_content_type(server):
    """A cross-site form can send these without a CORS preflight: refused, nothing stored."""
    before = len(server.uploads.files)
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, _, raw = call(server, "/api/upload", method="POST", body=b"{}", headers={"Content-Type": ctype})
        assert status == 415, ctype
    assert len(server.uploads.files) == before


@pytest.mark.parametrize("site,status", [("cross-site", 403), ("same-site", 403), ("same-origin", 200),
                                         ("none", 200)])
def test_other_web_pages_cannot_make_it_compute(server, site, status):
    """A page the user visits elsewhere may fire GETs at 127.0.0.1; browsers label them Sec-Fetch-Site."""
    got, _, raw = call(server, "/api/predict", BASE, headers={"Sec-Fetch-Site": site})
    assert got == status, raw
    if status == 403:
        assert "other web pages" in json.loads(raw)["error"]


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
    assert status == 400                                  # the HTTP parser refuses it before the app


@pytest.mark.parametrize("kind,body,needle", [
    ("config", b"{not json", "not valid JSON"),
    ("config", b"[1, 2, 3]", "JSON object"),
    ("config", b"\xff\xfe\x00", "not valid JSON"),
    ("config", json.dumps({"hidden_size": 4096}).encode(), "lacks"),
    ("config", json.dumps({**LLAMA3_8B_CONFIG, "num_key_value_heads": 5}).encode(), "multiple"),
    ("config", json.dumps({**LLAMA3_8B_CONFIG, "rope_theta": "fast"}).encode(), "cannot read"),
    ("gguf", b"not a gguf file at all", "gguf"),
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


def test_upload_kind_is_checked(server):
    status, _, raw = call(server, "/api/upload", {"kind": "zip"}, method="POST", body=b"PK")
    doc = json.loads(raw)
    assert status == 422 and doc["field"] == "kind" and "'config'" in doc["error"] and "'gguf'" in doc["error"]


def test_page_is_offline():
    for name in ("index.html", "app.js", "charts.js", "serving.js", "style.css"):
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
    pytest.importorskip("gguf")
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


@pytest.mark.parametrize("params,status,needle", [({"kind": "gguf", "size": "-1"}, 422, "size must be at least 0"),
                                                  ({"kind": "gguf", "size": "3"}, 400, "size must be between"),
                                                  ({"kind": "gguf", "size": str(1 << 50)}, 400, "size must be between"),
                                                  ({"kind": "gguf", "size": "big"}, 422, "whole number"),
                                                  ({"kind": "config", "size": "100"}, 422, "kind=gguf")])
def test_bad_declared_size(server, params, status, needle):
    got, _, raw = call(server, "/api/upload", params, method="POST", body=b"GGUF" + b"\0" * 20)
    assert got == status and needle in json.loads(raw)["error"]


SAMPLES = {"model": "llama-3-8b", "hardware": "rtx-4090"}


def required_keys(doc, schema):
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return set(schema.get("required", []))


def test_openapi_is_generated_and_every_endpoint_it_lists_answers(server):
    """The document comes from the typed routes; call each operation it lists with its required parameters
    and check the answer carries the keys its response schema requires."""
    doc = ok_json(server, "/api/openapi.json")
    assert doc["openapi"].startswith("3.") and not (STATIC / "openapi.json").exists()
    ops = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]
    assert {p for p, _, _ in ops} >= {"/api/models", "/api/hardware", "/api/options", "/api/predict", "/api/explain",
                                      "/api/calculator", "/api/alternatives", "/api/report.html", "/api/upload"}
    pred_params = {p["name"] for p in doc["paths"]["/api/predict"]["get"]["parameters"]}
    assert {"model", "hardware", "quant", "kv_dtype", "engine", "prompt", "gen", "context", "batch", "gpus",
            "offload"} <= pred_params
    for path, method, op in ops:
        params = {p["name"]: SAMPLES[p["name"]] for p in op.get("parameters", []) if p.get("required")}
        body = None
        if method == "post":
            body = json.dumps(LLAMA3_8B_CONFIG).encode()
        status, ctype, raw = call(server, path, params, method=method.upper(), body=body)
        assert status == 200, (path, raw[:300])
        content = op["responses"]["200"].get("content", {})
        if "application/json" in content and content["application/json"].get("schema"):
            got = json.loads(raw)
            assert required_keys(doc, content["application/json"]["schema"]) <= set(got), path
        else:
            assert ctype.startswith("text/html") and b"<h1>" in raw, path
    # every refusal is documented as the error document
    assert set(doc["components"]["schemas"]["Error"]["required"]) == {"error", "status"}


def test_alternatives_for_a_setup_that_does_not_fit(server):
    d = ok_json(server, "/api/alternatives", {"model": "llama-3-70b", "hardware": "rtx-4090", "quant": "Q4_K_M"})
    assert d["prediction"]["hypothetical"] is True and d["prediction"]["memory"]["fits"] is False
    kinds = {w["kind"]: w for w in d["alternatives"]}
    # 70B Q4_K_M ≈ 42 GB of weights: two 24 GB cards hold it, one card plus system RAM does too
    assert kinds["gpus"]["settings"]["gpus"] == "2" and kinds["offload"]["settings"]["offload"] == "auto"
    for w in d["alternatives"]:            # each way, applied, is a setup that fits and is not hypothetical
        got = ok_json(server, "/api/predict", {"model": "llama-3-70b", "hardware": "rtx-4090", "quant": "Q4_K_M",
                                                **w["settings"]})
        assert got["memory"]["fits"] and not got["hypothetical"]
        assert got["decode"]["tok_s"] == pytest.approx(w["tok_s"], rel=0.02)
    fits = ok_json(server, "/api/alternatives", BASE)
    assert fits["alternatives"] == [] and fits["prediction"]["hypothetical"] is False


def test_unknown_flops_are_null_not_zero(server):
    """A custom device without an FP16 figure: prefill, TTFT and the ridge are unknown (null), never 0."""
    d = ok_json(server, "/api/calculator", {"model": "llama-3-8b", "hardware": "custom", "bandwidth_gbps": "546",
                                            "memory_gb": "128"})
    assert d["prediction"]["prefill"]["tok_s"] is None and d["prediction"]["ttft_s"] is None
    assert d["explanation"]["ridge_flops_per_byte"] is None and d["explanation"]["matmul_tflops"] is None
    assert "prefill" not in d["roofline"] and d["roofline"]["decode"]
    hw = {h["id"]: h for h in ok_json(server, "/api/hardware")["hardware"]}
    # Apple publishes no FP16 figure; the catalog derives one: 40 GPU cores x 128 FP16 FMA lanes x 2 x 1.8 GHz
    assert hw["m4-max-40"]["fp16_tflops"] == pytest.approx(40 * 128 * 2 * 1.8e9 / 1e12, abs=0.01)
    assert hw["rtx-4090"]["fp16_tflops"] == pytest.approx(165.2)


def test_calculator_curve_and_roofline(server):
    d = ok_json(server, "/api/calculator", {**BASE, "context": "1024"})
    assert [p["context"] for p in d["context_curve"]] == [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    for p in d["context_curve"]:     # each point is predict's one-token decode at that context
        one = predict("llama-3-8b", "rtx-4090", prompt=0, gen=1, context=p["context"])
        assert p["tok_s"] == pytest.approx(one.decode.tok_s) and p["fits"] == one.memory.fits
    # the roofline's points sit under the roof: attained FLOP/s ≤ min(peak, bandwidth × intensity)
    peak, bw = 165.2e12, 1008e9
    for mode in ("decode", "prefill"):
        for pt in d["roofline"][mode]:
            assert pt["flops_per_s"] <= min(peak, bw * pt["intensity"]) * 1.0001, (mode, pt)
    assert d["explanation"]["context"] == 1024 + 512          # the first generated token: context + prompt


CUSTOM_NO_FP16 = {"hardware": "custom", "bandwidth_gbps": "546", "memory_gb": "128"}


@pytest.mark.parametrize("model,hw,unknown,misfit", [("llama-3-8b", CUSTOM_NO_FP16, True, False),
                                                      ("llama-3.1-405b", {"hardware": "rtx-4090"}, False, True)])
def test_report_download(server, model, hw, unknown, misfit):
    """The report of a device without an FP16 figure says unknown; 243 GB of 405B weights on 24 GB do not fit."""
    status, ctype, raw = call(server, "/api/report.html", {"model": model, **hw, "quant": "Q4_K_M"})
    assert status == 200 and ctype.startswith("text/html")
    text = raw.decode()
    assert ("unknown" in text) == unknown and ("does not fit" in text.lower()) == misfit


def test_fit_ranking_is_bounded(server):
    from tokspeed.web.api import fit_available

    if not fit_available():
        pytest.skip("this build has no tokspeed.advise.runs_here (issue 13's ranking)")
    got, _, raw = call(server, "/api/fit", {"hardware": "rtx-4090", "prompt": "100000"})
    assert got == 400 and json.loads(raw)["field"] == "prompt"
    d = ok_json(server, "/api/fit", {"hardware": "rtx-4090", "top": "3"})
    assert len(d["rows"]) == 3 and d["rows"][0]["fits"]


@pytest.mark.parametrize("params, field, words", [
    ({"gpus": "2", "parallel": "none"}, "parallel", ["parallel='none'", "gpus=2"]),
    ({"engine": "vllm", "flash_attn": "on"}, "flash_attn", ["flash_attn"]),
])
def test_a_library_refusal_names_the_query_fields(server, params, field, words):
    """The library's words are the query's: no CLI flag in a 4xx, and ``field`` names the query field at fault
    (``flash_attention`` in the library is ``flash_attn`` here)."""
    status, _, body = call(server, "/api/predict", {**BASE, **params})
    doc = json.loads(body)
    assert status == 400 and doc["field"] == field, doc
    text = doc["error"] + " " + doc.get("suggestion", "")
    assert all(w in text for w in words) and "--" not in text and "flash_attention" not in text, doc


@pytest.mark.parametrize("params, field", [
    ({"quant": "Q9"}, "quant"), ({"engine": "foo"}, "engine"), ({"kv_dtype": "q9"}, "kv_dtype"),
    ({"engine_version": "zzz"}, "engine_version"), ({"engine": "vllm", "quant": "Q4_K_M"}, "quant"),
    ({"engine": "mlx"}, "engine"),
])
def test_an_unknown_or_unrunnable_name_names_its_field(server, params, field):
    status, _, body = call(server, "/api/predict", {**BASE, **params})
    assert status == 400 and json.loads(body).get("field") == field, body
