"""`tokspeed web` costs, measured side by side in one run (not a test: the numbers depend on the machine).

Prints and writes to benchmarks/RESULTS_web.md:
  1. the CPU time of one /api/explain and /api/predict against the prompt (prefill) length, for DeepSeek-V3
     on an H100: the reason for the API's MAX_PREFILL (the prefill ledger is summed per 512-token micro-batch);
  2. the /api/calculator latency through HTTP (median and worst of N edits of the context), i.e. the server
     part of the page's edit-to-redraw time;
  3. 50 clients at once on /api/predict: all served?, wall time, and p50/p99 latency.

    python benchmarks/bench_web.py            # ~1 min on 2 cores
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "RESULTS_web.md"


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def prefill_cost() -> list[str]:
    from tokspeed.explain import explain
    from tokspeed.predict import predict

    explain("deepseek-v3", "h100-sxm")                   # warm the catalogs
    rows = ["| prompt tokens | explain (s) | predict (s) |", "|---:|---:|---:|"]
    for n in (8192, 32768, 131072, 1048576):
        e = timed(lambda: explain("deepseek-v3", "h100-sxm", prefill=n, with_levers=False))
        p = timed(lambda: predict("deepseek-v3", "h100-sxm", prompt=n))
        rows.append(f"| {n:,} | {e:.2f} | {p:.2f} |")
    return rows


def get(url: str) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        r.read()
    return time.perf_counter() - t


def server_latency(srv) -> list[str]:
    base = srv.url + "api/calculator?model=llama-3-8b&hardware=rtx-4090&prompt=512&gen=128&context="
    get(base + "0")
    lat = [get(base + str(1000 + 7 * i)) for i in range(20)]
    return [f"/api/calculator, 20 context edits of llama-3-8b on rtx-4090: median {statistics.median(lat) * 1e3:.0f} ms, "
            f"worst {max(lat) * 1e3:.0f} ms"]


def fifty_clients(srv) -> list[str]:
    url = srv.url + "api/predict?model=llama-3-8b&hardware=rtx-4090&quant=Q4_K_M"
    lat, bad = [], []
    gate = threading.Barrier(50)

    def one():
        gate.wait()
        try:
            lat.append(get(url))
        except Exception as e:  # noqa: BLE001 - counted, that is the measurement
            bad.append(type(e).__name__)

    t = time.perf_counter()
    ths = [threading.Thread(target=one) for _ in range(50)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    wall = time.perf_counter() - t
    lat.sort()
    return [f"50 clients at once on /api/predict: {len(lat)} served, {len(bad)} failed, wall {wall:.2f} s, "
            f"p50 {lat[len(lat) // 2] * 1e3:.0f} ms, p99 {lat[-1] * 1e3:.0f} ms"]


def main():
    from tokspeed.web.server import start_in_thread

    lines = [f"# tokspeed web: measured costs ({dt.date.today()}, `python benchmarks/bench_web.py`)", "",
             "## CPU time of one request against the prompt length (DeepSeek-V3 on H100 SXM)", ""]
    lines += prefill_cost()
    srv = start_in_thread()
    try:
        lines += ["", "## Through HTTP", ""]
        lines += ["- " + x for x in server_latency(srv) + fifty_clients(srv)]
    finally:
        srv.shutdown()
        srv.server_close()
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
