"""End to end in headless Chromium (the Debian package, driven by Playwright): load the page, change inputs,
see the numbers become what the API returns; screenshots go to test-artifacts/."""

import json
import shutil
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytestmark = pytest.mark.slow
sync_api = pytest.importorskip("playwright.sync_api")

from tokspeed.units import fmt_rate  # noqa: E402
from tokspeed.web.server import start_in_thread  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
DEFAULTS = {"model": "llama-3-8b", "hardware": "rtx-4090", "quant": "F16", "kv_dtype": "f16", "engine": "llama.cpp",
            "context": "0", "batch": "1", "prompt": "512", "gen": "128"}
CONFIG = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
          "num_hidden_layers": 16, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": True}


@pytest.fixture(scope="module")
def env():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    ARTIFACTS.mkdir(exist_ok=True)
    srv = start_in_thread()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        # bypass_csp: the page's Content-Security-Policy forbids eval, which Playwright's wait_for_function uses
        page = browser.new_page(viewport={"width": 1440, "height": 1000}, bypass_csp=True)
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield srv, page, requests, errors, browser
        browser.close()
    srv.shutdown()
    srv.server_close()


def api(srv, path, params):
    with urllib.request.urlopen(srv.url.rstrip("/") + path + "?" + urlencode(params), timeout=60) as r:
        return json.loads(r.read())


def wait_value(page, element_id, value):
    page.wait_for_function(
        "([id, v]) => { const e = document.getElementById(id); return e && e.dataset.value !== undefined &&"
        " Math.abs(parseFloat(e.dataset.value) - v) <= 1e-9 * Math.max(Math.abs(v), 1e-12); }",
        arg=[element_id, value], timeout=30000)


def shot(page, name):
    page.wait_for_function("[...document.querySelectorAll('.charts img')].every(i => i.complete && i.naturalWidth > 0"
                           " && !i.classList.contains('loading'))", timeout=60000)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def check_against_api(srv, page, params, mode="decode"):
    pred = api(srv, "/api/predict", params)
    wait_value(page, "out-tok-s", pred["decode"]["tok_s"])
    wait_value(page, "out-bound", pred["decode"]["bound_tok_s"])
    wait_value(page, "out-bytes", pred["decode"]["bytes_per_token"])
    wait_value(page, "out-memory", pred["memory"]["total_bytes"])
    assert page.text_content("#out-tok-s") == fmt_rate(pred["decode"]["tok_s"])
    assert page.text_content("#out-bound") == fmt_rate(pred["decode"]["bound_tok_s"])
    ex = {k: v for k, v in params.items() if k not in ("prompt", "gen")}
    if mode == "prefill":
        ex["prefill"] = params["prompt"]
    else:
        ex["context"] = str(int(params["context"]) + int(params["prompt"]))
    expl = api(srv, "/api/explain", ex)
    wait_value(page, "journey-total", expl["total_s"])
    rows = page.locator("#journey tbody tr:not(.phase)").count()
    assert rows == len(expl["stages"]) + 1                   # every stage + the total
    return pred


def test_page_follows_the_inputs(env):
    srv, page, requests, errors, _ = env
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached")
    first = check_against_api(srv, page, DEFAULTS)
    page.wait_for_function("document.getElementById('chart-overview').naturalWidth > 0", timeout=30000)
    page.wait_for_function("document.getElementById('chart-context').naturalWidth > 0", timeout=30000)
    assert page.text_content("#out-fit") == "fits"
    shot(page, "web-default.png")

    page.select_option("#quant", "Q4_K_M")
    page.fill("#context", "32768")
    q4 = check_against_api(srv, page, {**DEFAULTS, "quant": "Q4_K_M", "context": "32768"})
    assert q4["decode"]["tok_s"] > first["decode"]["tok_s"]
    shot(page, "web-q4-32k.png")

    page.select_option("#hardware", "h100-sxm")
    page.select_option("#engine", "vllm")
    check_against_api(srv, page, {**DEFAULTS, "quant": "Q4_K_M", "context": "32768", "hardware": "h100-sxm",
                                  "engine": "vllm"})

    page.select_option("#hardware", "custom")
    assert page.is_visible("#bandwidth_gbps")
    page.fill("#bandwidth_gbps", "500")
    page.fill("#memory_gb", "16")
    custom = {**DEFAULTS, "quant": "Q4_K_M", "context": "32768", "hardware": "custom", "engine": "vllm",
              "bandwidth_gbps": "500", "memory_gb": "16", "fp16_tflops": "100"}
    check_against_api(srv, page, custom)
    assert page.text_content("#out-fit") in ("fits", "does not fit")

    assert not errors
    assert all(u.startswith(srv.url) or u.startswith("data:") for u in requests), \
        [u for u in requests if not u.startswith(srv.url)]           # offline: nothing from elsewhere


def test_bad_value_shows_message(env):
    srv, page, requests, errors, _ = env
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached")
    page.fill("#batch", "0")
    page.wait_for_selector("#error:not(.hidden)", timeout=30000)
    assert "batch must be at least 1" in page.text_content("#error")
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / "web-error.png"))
    page.fill("#batch", "4")
    page.wait_for_selector("#error.hidden", state="attached", timeout=30000)
    check_against_api(srv, page, {**DEFAULTS, "batch": "4"})


def test_upload_config(env, tmp_path):
    srv, page, requests, errors, _ = env
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG))
    page.set_input_files("#upload", str(cfg))
    page.wait_for_function("document.getElementById('model').value.startsWith('upload:')", timeout=30000)
    ref = page.input_value("#model")
    assert "16 layers" in page.text_content("#upload-status")
    check_against_api(srv, page, {**DEFAULTS, "model": ref})
    shot(page, "web-upload.png")
    assert not errors


def test_page_runs_under_its_content_security_policy(env):
    srv, _, _, _, browser = env
    page = browser.new_page(viewport={"width": 1200, "height": 900})     # CSP enforced here
    console = []
    page.on("console", lambda m: console.append(m.text))
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached", timeout=30000)
    page.wait_for_selector("#journey tbody tr", timeout=30000)
    assert page.text_content("#out-tok-s") not in ("", "–")
    assert not [m for m in console if "Content Security Policy" in m]
    page.close()


def test_upload_gguf(env, tmp_path):
    pytest.importorskip("tokspeed.files.loader")
    from web_fixtures import tiny_llama_gguf

    srv, page, requests, errors, _ = env
    path = tiny_llama_gguf(tmp_path / "tiny-llama.gguf")
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached")
    page.set_input_files("#upload", str(path))
    page.wait_for_function("document.getElementById('model').value.startsWith('upload:')", timeout=30000)
    ref = page.input_value("#model")
    assert "2 layers" in page.text_content("#upload-status")
    pred = check_against_api(srv, page, {**DEFAULTS, "model": ref})
    from tokspeed.predict import predict

    assert pred["memory"]["weights_bytes"] == predict(str(path), "rtx-4090").memory.weights_bytes
    assert not errors


def test_prefill_toggle_and_shareable_url(env):
    srv, page, requests, errors, _ = env
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached")
    page.fill("#prompt", "2048")
    page.click("label:has(#mode-prefill)")
    params = {**DEFAULTS, "prompt": "2048"}
    check_against_api(srv, page, params, mode="prefill")
    assert "A prefill of 2,048 tokens" in page.text_content("#journey-head")
    assert page.locator("#journey .b-compute").count() >= 3          # QKV, attention, FFN turn compute-bound
    shot(page, "web-prefill.png")
    # the state lives in the URL: a reload (or a shared link) restores it
    url = page.url
    assert "prompt=2048" in url and "explain=prefill" in url
    page.goto("about:blank")
    page.goto(url)
    page.wait_for_selector("body[data-updated]", state="attached")
    assert page.input_value("#prompt") == "2048" and page.is_checked("#mode-prefill")
    check_against_api(srv, page, params, mode="prefill")
    assert not errors
