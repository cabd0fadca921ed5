"""Fit the serving engines' step constants on the public serving rows and write what the simulator reads.

    PYTHONPATH=. python3 scripts/fit_serving.py            # writes tokspeed/serving/serving_fitted.toml
                                                           # and docs/serving.md

One set of three constants per device vendor, shared by vLLM, SGLang and TensorRT-LLM (CUDA and ROCm kernels
differ; engines and releases differ by mechanism: CUDA graphs and host overlap per release,
``serving/engine_versions.toml``; GEMM paths, ``serving/gemm_device.py``), all physical
(``tokspeed.serving.fitted``): ``gpu_scale`` (measured step time / the roofline step of the engine profile),
``step_s`` (host time per step, counted where the release does not hide it) and ``link_scale`` (collective time /
the link model's; held at its prior 1, see ``OVERHEAD_GRID``). Each is shrunk toward its prior (1, 0, 1): ``SHRINK``
x |log| of its distance is added to the objective. A step takes ``gpu_scale x (t_roofline + (link_scale - 1)
x t_link + o)`` with ``o = step_s / gpu_scale``: every case is simulated once per ``(o, link_scale)`` on a grid
(``OVERHEAD_GRID``); at fixed ``o`` a closed-loop or offline run scales exactly with
``gpu_scale`` (every step time x s: tok/s / s, TPOT and TTFT x s), so ``gpu_scale`` is searched without
re-simulating (rate rows: approximately). The objective is the median |log(predicted / measured)| of
output tok/s per GPU + TPOT p50 + half of TTFT p50 (TensorRT-LLM's in-process TTFT; the HTTP-timed TTFT of vLLM and
SGLang fits ``lead_tokens`` instead: ``fit_lead``), over the engine's rows (each source weighted equally: its rows'
errors enter once per source through the per-source median). No row is tuned alone.

Each entry also carries the p90 of its rows' held-out TPOT and TTFT errors (leave one GPU out; the error a band
covers, max(predicted / measured, measured / predicted) - 1), the band ``predict`` states where it applies these
constants.

Evaluation, printed and written to docs/serving.md, held out first: forward in time (fit on
``serving-calibration.csv`` alone, score the newer ``serving-calibration-2.csv`` rows), leave-one-GPU-out (fit
without the device, predict its rows) and leave-one-engine-out (fit on the other engines, predict this one); then
in sample (labelled so): median and p90 of |predicted / measured - 1|.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokspeed.hardware.catalog import get_hardware  # noqa: E402
from tokspeed.serving.fitted import fitted_key, shared_key  # noqa: E402
from tokspeed.serving.rows import CSV, CSV2, IN_PROCESS, evaluate_case, load_cases  # noqa: E402
from tokspeed.serving_api import make_setup  # noqa: E402
from tokspeed.stats import band_error_pct, percentile  # noqa: E402
from tokspeed.toml_writer import dumps  # noqa: E402

MIN_GROUP = 10          # rows an engine needs on one vendor's devices for a gpu_scale of its own
SHRINK = 0.05          # objective weight of |log gpu_scale|, |log link_scale| and step_s / 1 ms: the pull to the prior
# (o, link_scale). link_scale stays at its prior 1: the collectives are timed by a latency-bandwidth model per
# algorithm and link from sourced figures (scale/collectives.py, scale/fabrics.toml). Offered 2, the fit took it on
# every vendor to lift the vLLM and SGLang TTFT rows its prompt steps leave ~50 % short (all layouts, TP1
# included), and that made the newer TP4/TP8 rows' TPOT ~10 % slow: a free link scale absorbs another mechanism's
# miss, so it is not fitted.
OVERHEAD_GRID = tuple((o, 1.0) for o in (0.0, 5e-4, 1e-3))
SCALE_GRID = [math.exp(x / 100) for x in range(-90, 91)]
METRICS = (("tok_s_per_gpu", 1.0, -1), ("tpot_ms", 1.0, 1), ("ttft_ms", 0.5, 1))   # (key, weight, power of s)
# TTFT rows timed by an HTTP streaming client (every public vLLM and SGLang one: benchmark_serving, InferenceMAX,
# SGLang's bench_serving) count the first chunk with text, a few decode steps after the engine's first token: they fit
# ``lead_tokens`` (``fit_lead``), not gpu_scale. Fitted into gpu_scale (they sit ~2x above the simulated first token
# at every TP and prompt length) they pulled the shared NVIDIA gpu_scale to 1.1 on the older rows, ~9 % slow on the
# newer rows' tok/s and TPOT. TensorRT-LLM's rows are in-process (rows.IN_PROCESS): their TTFT is the engine's.
LEAD_GRID = [x / 4 for x in range(0, 41)]       # 0 ... 10 tokens
OUT_TOML = ROOT / "tokspeed" / "serving" / "serving_fitted.toml"
OUT_DOC = ROOT / "docs" / "serving.md"


def simulate_all(cases):
    """{(o, link_scale): [prediction dict or None per case]} at gpu_scale 1."""
    out = {}
    for o, link in OVERHEAD_GRID:
        preds = []
        for c in cases:
            try:
                preds.append(evaluate_case(c, {"gpu_scale": 1.0, "step_s": o, "link_scale": link},
                                           make_setup=make_setup))
            except Exception as e:           # noqa: BLE001  report and go on: a case the simulator refuses
                print(f"  {c.id}: {type(e).__name__}: {e}", file=sys.stderr)
                preds.append(None)
        out[(o, link)] = preds
    return out


def scaled(pred: dict, s: float, lead: float = 0.0) -> dict:
    """A simulation at gpu_scale 1 and no lead tokens, at gpu_scale ``s`` and ``lead`` tokens before the client's first
    text (its TTFT later by that many TPOTs: ``metrics.client_view`` at the p50 request)."""
    out = {k: (None if pred.get(k) is None else pred[k] * s ** p) for k, _, p in METRICS}
    if lead and out.get("ttft_ms") is not None and out.get("tpot_ms"):
        out["ttft_ms"] += lead * out["tpot_ms"]
    return out


def lead_of(c, p: dict) -> float:
    return 0.0 if c.engine in IN_PROCESS else p.get("lead_tokens", 0.0)


def log_errors(idx, cases, preds, s) -> dict:
    """{metric: [(source, |log(pred/meas)|)]} over the cases ``idx``."""
    out = {k: [] for k, _, _ in METRICS}
    for i in idx:
        p = preds[i]
        if p is None:
            continue
        q = scaled(p, s)
        c = cases[i]
        for k, _, _ in METRICS:
            meas = getattr(c, k)
            if k == "ttft_ms" and c.engine not in IN_PROCESS:
                continue
            if meas and q[k] and q[k] > 0:
                out[k].append((c.source, abs(math.log(q[k] / meas))))
    return out


def by_source_median(pairs) -> float | None:
    """Median over sources of each source's median error (every source counts once)."""
    per = {}
    for src, e in pairs:
        per.setdefault(src, []).append(e)
    if not per:
        return None
    return statistics.median(statistics.median(v) for v in per.values())


def objective(idx, cases, preds, s) -> float:
    errs = log_errors(idx, cases, preds, s)
    total = 0.0
    for k, w, _ in METRICS:
        m = by_source_median(errs[k])
        if m is not None:
            total += w * m
    return total


def prior_distance(o, s: float) -> float:
    """How far (o, link_scale) and gpu_scale ``s`` sit from the priors (0, 1, 1), in the objective's log units."""
    return SHRINK * (abs(math.log(s)) + abs(math.log(o[1])) + s * o[0] / 1e-3)


def fit(idx, cases, sims) -> dict:
    best = None
    for o, preds in sims.items():
        for s in SCALE_GRID:
            v = objective(idx, cases, preds, s) + prior_distance(o, s)
            if best is None or v < best[0]:
                best = (v, o, s)
    if best is None or not idx:
        return dict(NEUTRAL)
    _, o, s = best
    return {"gpu_scale": s, "step_s": s * o[0], "link_scale": o[1], "o": o}


def fit_engine(idx, cases, sims, shared: dict) -> dict:
    """An engine's own ``gpu_scale`` on a vendor (its kernels' efficiency), the host time and link scale kept at the
    vendor's shared values, pulled toward the shared ``gpu_scale`` (partial pooling: ``SHRINK`` x |log ratio|)."""
    preds = sims[shared["o"]]
    best = min(SCALE_GRID, key=lambda s: objective(idx, cases, preds, s)
               + SHRINK * abs(math.log(s / shared["gpu_scale"])))
    return {"gpu_scale": best, "step_s": best * shared["o"][0], "link_scale": shared["o"][1], "o": shared["o"]}


def group_of(c) -> str:
    return shared_key(vendor_of(c))


def fit_groups(train, cases, sims) -> dict:
    """{table key: params}: one entry per device vendor over every engine's rows on it (``serving@vendor``: host
    time, link scale, gpu_scale), and an ``engine@vendor`` gpu_scale pulled toward it where the engine has
    ``MIN_GROUP`` rows there."""
    out = {}
    for g in sorted({group_of(cases[i]) for i in train}):
        rows = [i for i in train if group_of(cases[i]) == g]
        out[g] = fit(rows, cases, sims)
        for e in sorted({cases[i].engine for i in rows}):
            sub = [i for i in rows if cases[i].engine == e]
            if len(sub) >= MIN_GROUP:
                out[fitted_key(e, vendor_of(cases[sub[0]]))] = fit_engine(sub, cases, sims, out[g])
    lead = fit_lead(train, cases, sims, out)
    for p in out.values():
        p["lead_tokens"] = lead
    return out


def fit_lead(idx, cases, sims, table: dict) -> float:
    """Tokens before an HTTP client's first text, one for every engine and vendor (a property of the replies and the
    client, not of the GPU): the median over sources of |log| TTFT error of the streamed rows, under each row's
    fitted step constants, plus ``SHRINK`` x log(1 + lead), the pull to the prior 0."""
    rows = [i for i in idx if cases[i].engine not in IN_PROCESS and cases[i].ttft_ms]

    def cost(lead):
        errs = []
        for i in rows:
            p = params_of(cases[i], table)
            pred = sims[p["o"]][i]
            if pred is not None and pred.get("ttft_ms"):
                q = scaled(pred, p["gpu_scale"], lead)
                errs.append((cases[i].source, abs(math.log(q["ttft_ms"] / cases[i].ttft_ms))))
        m = by_source_median(errs)
        return (m if m is not None else 0.0) + SHRINK * math.log1p(lead)

    return min(LEAD_GRID, key=cost) if rows else 0.0


def held_out_engine(engine: str, cases, sims) -> dict:
    """The table fitted without any of ``engine``'s rows (per vendor on the other engines' rows there; on all their
    rows where no other engine ran on that vendor)."""
    others = [i for i, c in enumerate(cases) if c.engine != engine]
    out = fit_groups(others, cases, sims)
    for v in sorted({vendor_of(c) for c in cases if c.engine == engine}):
        out.setdefault(shared_key(v), fit(others, cases, sims))
    return out


def vendor_of(c) -> str:
    return get_hardware(c.hardware).vendor


def params_of(c, table: dict) -> dict:
    return table.get(fitted_key(c.engine, vendor_of(c))) or table.get(group_of(c)) or NEUTRAL


NEUTRAL = {"gpu_scale": 1.0, "step_s": 0.0, "link_scale": 1.0, "lead_tokens": 0.0, "o": (0.0, 1.0)}


def rel_errors(idx, cases, sims, params, band: bool = False) -> dict:
    """{metric: [|pred/meas - 1|]} for the cases ``idx`` under ``params`` (one pair, or a table by group);
    ``band``: the error a band covers instead (``stats.band_error_pct``, as a fraction: max(pred/meas, meas/pred) - 1)."""
    out = {k: [] for k, _, _ in METRICS}
    for i in idx:
        p = params_of(cases[i], params) if "gpu_scale" not in params else params
        pred = sims[p["o"]][i]
        if pred is None:
            continue
        q = scaled(pred, p["gpu_scale"], lead_of(cases[i], p))
        for k, _, _ in METRICS:
            meas = getattr(cases[i], k)
            if meas and q[k] is not None:
                out[k].append(band_error_pct((q[k] / meas - 1) * 100) / 100 if band else abs(q[k] / meas - 1))
    return out


def pct(xs, q):
    return percentile(xs, q) if xs else None


HEADER = """# Written by scripts/fit_serving.py (do not edit): serving constants per device vendor, shared by vLLM,
# SGLang and TensorRT-LLM, fitted on data/validation/serving-calibration.csv and serving-calibration-2.csv.
# gpu_scale: measured / roofline step time; step_s: host time per step (s), where the release does not
# hide it; link_scale: collectives / the link model. tpot_error_pct / ttft_error_pct: p90 of the held-out
# (leave one GPU out) max(predicted / measured, measured / predicted) - 1, predict's band. lead_tokens: tokens
# before a streaming client's first text (TTFT as HTTP benchmark clients count it; one value for every entry).
# The [forward] entries are fitted on serving-calibration.csv alone: the forward-in-time test's constants (the
# newer rows held out; benchmarks/bench_aiconfigurator.py scores those rows with them), not read by predictions.
# See docs/serving.md.
"""


def _constants(p: dict) -> dict:
    return {"gpu_scale": round(p["gpu_scale"], 4), "step_s": round(p["step_s"], 6), "link_scale": p["link_scale"],
            "lead_tokens": p.get("lead_tokens", 0.0)}


def constants_toml(table: dict, forward: dict, held: dict, cases) -> str:
    """serving_fitted.toml's text (``tokspeed.toml_writer``): an entry per fitted key, its rows and held-out p90
    bands, then the forward-in-time constants under ``[forward]``."""
    data = {}
    for key, p in table.items():
        entry = _constants(p)
        entry["rows"] = sum(1 for c in cases if key in (group_of(c), fitted_key(c.engine, vendor_of(c))))
        errs = held.get(key, {})
        for name, k in (("tpot_error_pct", "tpot_ms"), ("ttft_error_pct", "ttft_ms")):
            if errs.get(k):
                entry[name] = round(pct(errs[k], 90) * 100)
        data[key] = entry
    data["forward"] = {key: _constants(p) for key, p in forward.items()}
    return dumps(data, header=HEADER)


def fmt(errs) -> str:
    cells = []
    for k, _, _ in METRICS:
        xs = errs[k]
        cells.append("–" if not xs else f"{pct(xs, 50) * 100:.0f} % / {pct(xs, 90) * 100:.0f} % ({len(xs)})")
    return " | ".join(cells)


def load_sims(cases, cache):
    """The simulations of ``cases`` on the grid, kept in ``cache`` (a JSON file) when given."""

    if cache is not None and cache.exists():
        kept = {tuple(json.loads(k)): v for k, v in json.loads(cache.read_text()).items()}
        return {k: v for k, v in kept.items() if k in OVERHEAD_GRID}
    sims = simulate_all(cases)
    if cache is not None:
        cache.write_text(json.dumps({json.dumps(k): v for k, v in sims.items()}))
    return sims


def signed(idx, cases, sims, table, key) -> str:
    """Median signed error of ``key`` over ``idx`` (a bias the absolute median hides)."""
    xs = []
    for i in idx:
        p = params_of(cases[i], table)
        pred, meas = sims[p["o"]][i], getattr(cases[i], key)
        if pred is not None and pred.get(key) and meas:
            xs.append(scaled(pred, p["gpu_scale"], lead_of(cases[i], p))[key] / meas - 1)
    return f"{statistics.median(xs) * 100:+.0f} %" if xs else "–"


def held_out_sections(cases, sims, idx_old, idx_new) -> tuple[list, dict, dict]:
    """Doc lines of the held-out evaluations; (lines, leave-one-GPU-out errors by table key, forward errors, the
    table fitted on the older file alone)."""
    t_old = fit_groups(idx_old, cases, sims)
    fwd = rel_errors(idx_new, cases, sims, t_old)
    lines = ["## Held out: forward in time", "",
             f"Fitted on `serving-calibration.csv` alone ({len(idx_old)} rows), scored on the {len(idx_new)} newer rows "
             "of `serving-calibration-2.csv` (vLLM 0.11.2 / 0.13.0 gpt-oss-120b MXFP4 on 1-8 x H100 / H200, SGLang "
             "0.5.6 DeepSeek-R1 FP8 on 8 x H200, Dec 2025 - Jan 2026):", "",
             "| rows | tok/s/GPU | TPOT p50 | TTFT p50 | signed tok/s/GPU | signed TPOT |", "|---|---|---|---|---|---|",
             f"| {len(idx_new)} | {fmt(fwd)} | {signed(idx_new, cases, sims, t_old, 'tok_s_per_gpu')} | "
             f"{signed(idx_new, cases, sims, t_old, 'tpot_ms')} |", ""]
    lines += ["## Held out: leave one GPU out (both files)", "",
              "| device | rows | tok/s/GPU | TPOT p50 | TTFT p50 |", "|---|---|---|---|---|"]
    every = list(range(len(cases)))
    pooled = {k: [] for k, _, _ in METRICS}
    held = {}
    for dev in sorted({c.hardware for c in cases}):
        test = [i for i, c in enumerate(cases) if c.hardware == dev]
        t_dev = fit_groups([i for i in every if cases[i].hardware != dev], cases, sims)
        errs = rel_errors(test, cases, sims, t_dev)
        for k, v in errs.items():
            pooled[k] += v
        for k, v in rel_errors(test, cases, sims, t_dev, band=True).items():
            held.setdefault(group_of(cases[test[0]]), {m: [] for m, _, _ in METRICS})[k] += v
        for e in sorted({cases[i].engine for i in test}):
            sub = [i for i in test if cases[i].engine == e]
            for k, v in rel_errors(sub, cases, sims, t_dev, band=True).items():
                held.setdefault(fitted_key(e, vendor_of(cases[sub[0]])), {m: [] for m, _, _ in METRICS})[k] += v
        lines.append(f"| {dev} | {len(test)} | {fmt(errs)} |")
    lines += [f"| **all** | {len(cases)} | {fmt(pooled)} |", "",
              "## Held out: leave one engine out (both files)", "",
              "| engine | rows | tok/s/GPU | TPOT p50 | TTFT p50 |", "|---|---|---|---|---|"]
    pooled_e = {k: [] for k, _, _ in METRICS}
    for e in sorted({c.engine for c in cases}):
        idx = [i for i, c in enumerate(cases) if c.engine == e]
        errs = rel_errors(idx, cases, sims, held_out_engine(e, cases, sims))
        for k, v in errs.items():
            pooled_e[k] += v
        lines.append(f"| {e} | {len(idx)} | {fmt(errs)} |")
    lines += [f"| **all** | {len(cases)} | {fmt(pooled_e)} |", ""]
    return lines, held, fwd, t_old


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="fit the serving engines' step constants")
    ap.add_argument("--cache", default=None, help="JSON file to keep the simulations in (reused when present)")
    a = ap.parse_args(argv)
    t0 = time.time()
    old, skipped = load_cases(CSV)
    new, skipped2 = load_cases(CSV2)
    cases = old + new
    for k, v in skipped2.items():
        skipped[k] = skipped.get(k, 0) + v
    idx_old, idx_new = list(range(len(old))), list(range(len(old), len(cases)))
    print(f"{len(cases)} cases ({', '.join(f'{k}: {v}' for k, v in skipped.items())} skipped); simulating "
          f"{len(OVERHEAD_GRID)} overheads ...", file=sys.stderr)
    sims = load_sims(cases, Path(a.cache) if a.cache else None)
    table = fit_groups(list(range(len(cases))), cases, sims)
    held_lines, held, fwd, t_old = held_out_sections(cases, sims, idx_old, idx_new)
    lines = [MARK, "",
             "Made by `scripts/fit_serving.py` from `data/validation/serving-calibration.csv` and the newer "
             "`serving-calibration-2.csv` (public vLLM, SGLang and TensorRT-LLM measurements; see their `-sources.md`). "
             "Errors are |predicted / measured - 1|: median / p90 (rows). Columns: output tok/s per GPU | TPOT p50 | "
             "TTFT p50. The held-out sections come first; the in-sample ones are labelled so.", "",
             f"Cases simulated: {len(cases)} rows; skipped: " + ", ".join(f"{k} {v}" for k, v in skipped.items()) + ".",
             ""] + held_lines
    lines += ["## Fitted constants (tokspeed/serving/serving_fitted.toml)", "",
              "One set per device vendor (`serving@vendor`), shared by vLLM, SGLang and TensorRT-LLM; priors gpu_scale "
              f"1, step_s 0, link_scale 1, pulled toward by {SHRINK} x their log distance in the objective. An engine "
              f"with {MIN_GROUP} rows or more on a vendor has its own gpu_scale (`engine@vendor`: its kernels), the "
              "host time and link scale the vendor's, pulled toward the vendor's gpu_scale the same way.", "",
              "| entry | rows | gpu_scale | step_s (ms) | link_scale | lead_tokens |", "|---|---|---|---|---|---|"]
    for key, p in table.items():
        n = sum(1 for c in cases if key in (group_of(c), fitted_key(c.engine, vendor_of(c))))
        lines.append(f"| {key} | {n} | {p['gpu_scale']:.3f} | {p['step_s'] * 1e3:.2f} | {p['link_scale']:g} | "
                     f"{p.get('lead_tokens', 0.0):g} |")
    lines += ["", "## In sample (fitted on these rows), per engine and scenario", "",
              "| engine | scenario | tok/s/GPU | TPOT p50 | TTFT p50 |", "|---|---|---|---|---|"]
    for e in sorted({c.engine for c in cases}):
        for sc in ("offline", "concurrency", "rate"):
            idx = [i for i, c in enumerate(cases) if c.engine == e and c.scenario == sc]
            if idx:
                lines.append(f"| {e} | {sc} | {fmt(rel_errors(idx, cases, sims, table))} |")
    lines += ["", f"In sample, the `serving-calibration-2.csv` rows: {fmt(rel_errors(idx_new, cases, sims, table))}.",
              "", "## Unfitted (roofline engine profiles alone)", "", "| engine | tok/s/GPU | TPOT p50 | TTFT p50 |",
              "|---|---|---|---|"]
    for e in sorted({c.engine for c in cases}):
        lines.append(f"| {e} | {fmt(rel_errors([i for i, c in enumerate(cases) if c.engine == e], cases, sims, NEUTRAL))} |")
    lines += ["", "The 11 TensorRT-LLM Llama-3.1-8B FP8 single-GPU H100/H200 max-throughput rows are not in the "
              "shared CSV (its sources note says those columns were excluded): `benchmarks/RESULTS_aiconfigurator.md` "
              "scores them.", "", f"Fit time: {time.time() - t0:.0f} s.", ""]
    OUT_TOML.write_text(constants_toml(table, t_old, held, cases))
    prev = OUT_DOC.read_text() if OUT_DOC.exists() else ""
    keep = prev.split(MARK)[0] if MARK in prev else prev
    OUT_DOC.write_text(keep + "\n".join(lines))
    print("\n".join(lines))
    return 0


MARK = "# Serving: simulated vs measured"     # docs/serving.md from here on is this script's; above it, by hand

if __name__ == "__main__":
    sys.exit(main())
