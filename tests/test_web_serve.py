"""`tokspeed web`'s /api/serve: the serving search (`tokspeed serve --json`) for catalog names, bounded, and the
page's serving panel (static/serving.js, the frontier chart in charts.js)."""

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from tokspeed.web import schemas  # noqa: E402
from tokspeed.web.app import create_app  # noqa: E402
from tokspeed.web.uploads import Uploads  # noqa: E402

Q = {"model": "llama-3-8b", "hardware": "h100-sxm", "engine": "vllm", "gpus": "2", "isl": "512", "osl": "128"}


@pytest.fixture(scope="module")
def client():
    uploads = Uploads()
    with TestClient(create_app(uploads), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        c.headers["host"] = "127.0.0.1"
        yield c
    uploads.close()


def test_serve_lists_the_layouts_of_two_gpus_and_a_frontier(client):
    r = client.get("/api/serve", params={**Q, "slo_tpot_ms": "50"})
    assert r.status_code == 200, r.text
    doc = r.json()
    schemas.Serve.model_validate(doc)
    assert (doc["model"], doc["gpus"], doc["isl"], doc["osl"]) == ("llama-3-8b", 2, 512, 128)
    assert doc["slo"]["tpot_ms"] == 50
    # two GPUs: two replicas, one TP2 worker, one prefill + one decode worker (pipelines only from 4 GPUs)
    kinds = {(c["layout"]["tp"], c["layout"]["replicas"], c["layout"]["disagg"] is not None) for c in doc["configs"]}
    assert kinds == {(1, 2, False), (2, 1, False), (1, 1, True)}
    # the frontier: as tok/s per user rises, tok/s per GPU falls (no point beats another on both)
    f = sorted(doc["frontier"], key=lambda p: p["tok_s_per_user"])
    assert f and all(a["tok_s_per_gpu"] > b["tok_s_per_gpu"] for a, b in zip(f, f[1:]))


@pytest.mark.parametrize("field,value,status", [
    ("model", "upload:abc123", 400), ("model", "/etc/passwd", 400), ("model", "../config.json", 400),
    ("hardware", "/proc/self/environ", 400), ("gpus", "17", 422), ("gpus", "0", 422), ("isl", "40000", 422),
    ("osl", "0", 422), ("slo_tpot_ms", "inf", 422), ("slo_ttft_ms", "-5", 422), ("engine", "nope", 400),
    ("isl", "8100", 400),               # 8,100 + 128 = 8,228 tokens: beyond llama-3-8b's 8,192-token window
])
def test_serve_refuses_what_it_cannot_take(client, field, value, status):
    r = client.get("/api/serve", params={**Q, field: value})
    assert r.status_code == status, r.text
    assert r.json()["field"] == field


def test_the_page_loads_the_serving_panel(client):
    page = client.get("/").text
    assert '<script src="/static/serving.js" defer></script>' in page and 'id="chart-frontier"' in page
    r = client.get("/static/serving.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert "/api/serve?" in r.text and "Charts.frontier(" in r.text
    assert "function frontier(" in client.get("/static/charts.js").text


def test_one_serving_search_at_a_time(client):
    """A second search while one runs is refused (503, one line) instead of queueing on a worker thread."""
    from tokspeed.web import api

    assert api._SEARCH.acquire(blocking=False)          # as if a search were running
    try:
        r = client.get("/api/serve", params={**Q, "slo_tpot_ms": "51.25"})
    finally:
        api._SEARCH.release()
    assert r.status_code == 503 and "already running" in r.json()["error"], r.text
    assert client.get("/api/serve", params={**Q, "slo_tpot_ms": "51.25"}).status_code == 200
    # an answer already made is given while another search runs
    assert api._SEARCH.acquire(blocking=False)
    try:
        assert client.get("/api/serve", params={**Q, "slo_tpot_ms": "51.25"}).status_code == 200
    finally:
        api._SEARCH.release()
