"""End to end in headless Chromium (the Debian package, driven by Playwright): load the page, change inputs,
see the numbers become what the API returns; screenshots go to test-artifacts/."""

import json
import re
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


def shot(page, name, full_page=True):
    page.wait_for_function("document.querySelectorAll('#chart-context canvas, #chart-roofline canvas').length === 2",
                           timeout=60000)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full_page)


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
    assert page.text_content("#out-fit") == "fits"
    assert "does not fit" not in page.text_content("#headline")
    shot(page, "web-default.png")

    page.select_option("#quant", "Q4_K_M")
    page.fill("#context", "32768")
    q4 = check_against_api(srv, page, {**DEFAULTS, "quant": "Q4_K_M", "context": "32768"})
    assert q4["decode"]["tok_s"] > first["decode"]["tok_s"]
    shot(page, "web-q4-32k.png")

    page.select_option("#hardware", "h100-sxm")
    page.select_option("#quant", "AWQ-4B")        # vLLM runs AWQ, not GGUF's Q4_K_M (the capability table)
    page.wait_for_selector("#error:not(.hidden)")    # llama.cpp refuses AWQ in one line, naming what runs it
    assert "AWQ-4B" in page.text_content("#error")
    page.select_option("#engine", "vllm")
    check_against_api(srv, page, {**DEFAULTS, "quant": "AWQ-4B", "context": "32768", "hardware": "h100-sxm",
                                  "engine": "vllm"})

    page.select_option("#engine", "llama.cpp")
    page.select_option("#quant", "Q4_K_M")
    page.select_option("#hardware", "custom")
    assert page.is_visible("#bandwidth_gbps")
    page.fill("#bandwidth_gbps", "500")
    page.fill("#memory_gb", "16")
    custom = {**DEFAULTS, "quant": "Q4_K_M", "context": "32768", "hardware": "custom", "engine": "llama.cpp",
              "bandwidth_gbps": "500", "memory_gb": "16", "fp16_tflops": "100"}
    check_against_api(srv, page, custom)
    assert page.text_content("#out-fit") in ("fits", "does not fit")

    assert not errors
    assert all(u.startswith(srv.url) or u.startswith("data:") for u in requests), \
        [u for u in requests if not u.startswith(srv.url)]           # offline: nothing from elsewhere


def test_engine_build_and_flash_attention(env):
    # a 2024 build at 8K of context: its default attention (unfused) and -fa on, each the API's figure; the
    # settings travel in the shareable URL
    srv, page, _, errors, _ = env
    page.goto(srv.url)
    page.wait_for_selector("body[data-updated]", state="attached")
    base = {**DEFAULTS, "quant": "Q4_K_M", "context": "8192"}
    page.select_option("#quant", "Q4_K_M")
    page.fill("#context", "8192")
    page.fill("#engine_version", "2024-05")
    old = check_against_api(srv, page, {**base, "engine_version": "2024-05"})
    page.select_option("#flash_attn", "on")
    fused = check_against_api(srv, page, {**base, "engine_version": "2024-05", "flash_attn": "on"})
    assert old["flash_attention"] is False and fused["flash_attention"] is True
    assert fused["decode"]["tok_s"] > old["decode"]["tok_s"]
    assert "engine_version=2024-05" in page.url and "flash_attn=on" in page.url
    # vLLM has neither setting: picking it clears and disables them instead of answering an error
    page.select_option("#quant", "F16")               # a format vLLM loads
    page.select_option("#engine", "vllm")
    check_against_api(srv, page, {**base, "quant": "F16", "engine": "vllm"})
    assert page.is_disabled("#flash_attn") and page.input_value("#engine_version") == ""
    assert "flash_attn" not in page.url
    page.select_option("#engine", "llama.cpp")
    assert page.is_enabled("#flash_attn")
    assert not errors


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
    pytest.importorskip("gguf")
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
    assert "The prefill: 2,048 prompt tokens" in page.text_content("#journey-head")
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


# ---- layouts, unknowns, "does not fit", redraw time ---------------------------------------------------
NOFIT = "#model=llama-3.1-405b&hardware=rtx-4090&quant=Q4_K_M"


def open_at(browser, srv, width, hash_="", height=900):
    page = browser.new_page(viewport={"width": width, "height": height}, bypass_csp=True)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(srv.url + hash_)
    page.wait_for_selector("body[data-updated]", state="attached", timeout=60000)
    return page, errors


def no_sideways_scroll(page):
    sw, cw = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert sw <= cw, f"page is {sw} px wide in a {cw} px window"


@pytest.mark.parametrize("width", [390, 820, 1400])
def test_layout_fits_the_window(env, width):
    srv, _, _, _, browser = env
    height = 844 if width == 390 else 900                         # an iPhone 14's CSS viewport: 390 × 844
    for name, hash_ in (("default", ""), ("nofit", NOFIT)):
        page, errors = open_at(browser, srv, width, hash_, height)
        shot(page, f"web-{width}-{name}.png", full_page=False)
        no_sideways_scroll(page)
        if width == 390:                  # results first: the headline and the main card before the form
            card = page.locator("#out-tok-s").bounding_box()
            form = page.locator("#form").bounding_box()
            assert card["y"] + card["height"] <= height and card["y"] < form["y"]
            assert page.locator("#headline").bounding_box()["y"] < form["y"]
        for table in ("#journey", "#levers"):        # a wide table scrolls inside its card, not the page
            box = page.locator(table).evaluate("t => [t.parentElement.clientWidth, t.closest('.panel').clientWidth]")
            assert box[0] <= box[1]
        shot(page, f"web-{width}-{name}-full.png")
        assert not errors
        page.close()


def test_devices_without_fp16_show_prefill_unknown(env):
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400, "#model=llama-3-8b&hardware=m4-max-40&quant=Q4_K_M")
    # Apple M4 Max: the catalog's FP16 figure is derived (GPU cores x FLOPs/clock x an assumed clock)
    assert page.is_hidden("#error")
    assert page.text_content("#out-prefill") != "unknown" and page.text_content("#out-ttft-v") != "unknown"
    assert page.locator("#chart-roofline canvas").count() == 1
    shot(page, "web-m4-max.png")
    # a custom device with no FP16 figure: clear the field
    page.select_option("#hardware", "custom")
    page.fill("#bandwidth_gbps", "546")
    page.fill("#memory_gb", "128")
    page.fill("#fp16_tflops", "")
    page.wait_for_function("location.hash.includes('memory_gb=128') && !location.hash.includes('fp16_tflops')")
    page.wait_for_function("document.getElementById('out-memory').textContent.includes('of 137.44 GB')",
                           timeout=30000)
    bound = float(page.get_attribute("#out-bound", "data-value"))
    per_token = float(page.get_attribute("#out-bytes", "data-value"))
    assert bound == pytest.approx(546e9 / per_token, rel=0.01)                  # the seeds' bandwidth ÷ bytes
    assert page.is_hidden("#error")
    assert page.text_content("#out-prefill") == "unknown" and page.text_content("#out-ttft-v") == "unknown"
    assert "unknown" in page.text_content("#headline")
    shot(page, "web-custom-no-fp16.png")
    assert not errors
    page.close()


def test_does_not_fit_headline_with_the_ways_it_would_run(env):
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400, NOFIT)
    head = page.text_content("#headline")
    # 405B at Q4_K_M: 243 GB of weights (≈ 405.85e9 × 4.8 bits / 8) against 24 GiB = 25.77 GB
    assert "does not fit" in head and "25.77 GB" in head and "hypothetical" in head
    assert "hypothetical" in page.text_content(".card.main").lower() and page.is_visible(".hypo-tag")
    page.wait_for_selector("#ways li.way", timeout=120000)
    ways = page.locator("#ways li.way").all_text_contents()
    # 244.65 GB in all against 25.77 GB (24 GiB) per card: at least 10 cards (9.5 rounded up); the layer split is uneven
    m = [re.search(r"(\d+) x NVIDIA GeForce RTX 4090.*?([\d.]+) tok/s", w) for w in ways]
    n = [int(x.group(1)) for x in m if x]
    assert n and n[0] >= 10, ways
    assert "offload" not in " ".join(ways)                 # 221 GB of layers would not fit a 64 GB host either
    shot(page, "web-405b-rtx4090.png")
    page.locator("#ways li.way button", has_text=" x NVIDIA").click()         # apply the way: it fits now
    page.wait_for_function("!document.getElementById('headline').textContent.includes('does not fit')",
                           timeout=60000)
    assert page.input_value("#gpus") == str(n[0]) and f"gpus={n[0]}" in page.url
    assert not errors
    page.close()


def test_edit_redraws_quickly(env):
    """The page redraws from the JSON it has (tables and both uPlot charts): the redraw itself is measured
    in the browser; the whole edit-to-redraw time (debounce + server + redraw) is recorded beside it."""
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400)
    redraws, totals = [], []
    for ctx in ("1024", "2048", "4096"):
        before = page.get_attribute("body", "data-updated")
        t0 = page.evaluate("performance.now()")
        page.fill("#context", ctx)
        page.wait_for_function("b => document.body.dataset.updated !== b", arg=before, timeout=60000)
        totals.append(page.evaluate("performance.now()") - t0)
        redraws.append(page.evaluate("window.tokspeedTiming.lastRedrawMs"))
    (ARTIFACTS / "web-timing.json").write_text(json.dumps({"redraw_ms": redraws, "edit_to_redraw_ms": totals}))
    assert max(redraws) < 300, redraws
    assert not errors
    page.close()


def test_dark_mode(env):
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400)
    page.click("#theme")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(15, 22, 29)"                               # --bg of the dark theme
    shot(page, "web-dark.png")
    page.click("#theme")
    assert not errors
    page.close()


def test_what_runs_here_and_its_csv(env, tmp_path):
    from tokspeed.web.api import fit_available

    if not fit_available():
        pytest.skip("this build has no tokspeed.advise.runs_here (issue 13's ranking)")
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400)
    assert page.is_visible("#fit-panel")
    page.click("#fit-run")
    page.wait_for_selector("#fit tbody tr td.n", timeout=120000)
    rows = page.locator("#fit tbody tr").count()
    api_rows = api(srv, "/api/fit", {"hardware": "rtx-4090", "context": "0", "prompt": "512", "engine": "llama.cpp"})["rows"]
    assert rows == len(api_rows) and page.text_content("#fit tbody tr td") == api_rows[0]["model"]
    with page.expect_download() as dl:
        page.click("#fit-csv")
    path = tmp_path / "fit.csv"
    dl.value.save_as(path)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("model,quant,fits") and len(lines) == len(api_rows) + 1
    assert lines[1].split(",")[0] == api_rows[0]["model"]
    shot(page, "web-fit.png")
    assert not errors
    page.close()


def test_tables_csv_download(env, tmp_path):
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400)
    with page.expect_download() as dl:
        page.click("#dl-csv")
    path = tmp_path / "t.csv"
    dl.value.save_as(path)
    text = path.read_text()
    pred = api(srv, "/api/predict", DEFAULTS)
    assert f"decode,tok_s,{pred['decode']['tok_s']!r}" in text.replace("e+", "e+")
    assert "stage,runs on,data from" in text
    assert not errors
    page.close()


def test_serving_panel_draws_the_frontier(env):
    srv, _, _, _, browser = env
    page, errors = open_at(browser, srv, 1400)
    page.fill("#gpus", "2")
    page.click("#serve-run")
    page.wait_for_selector("#serve tbody tr td.n", timeout=120000)
    page.wait_for_selector("#chart-frontier canvas", timeout=30000)
    doc = api(srv, "/api/serve", {"model": "llama-3-8b", "hardware": "rtx-4090", "gpus": "2", "engine": "llama.cpp",
                                  "kv_dtype": "f16", "quant": "F16", "isl": "1024", "osl": "256"})
    assert page.locator("#serve tbody tr").count() == len(doc["configs"])
    best = doc["configs"][0]["output_tok_s_per_gpu"]
    assert page.locator("#serve tbody tr").first.locator("td").nth(2).text_content() == f"{best:,.0f}"
    page.screenshot(path=str(ARTIFACTS / "web-serve.png"), full_page=True)
    assert not errors
    page.close()
