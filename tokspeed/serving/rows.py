"""The public serving measurements (``data/validation/serving-calibration.csv``) as simulation cases.

A row becomes a case when tokspeed knows its model, device and engine (vLLM, SGLang, TensorRT-LLM),
its weights are 16-bit or a format whose serving GEMMs are modelled (``formats.toml`` gemm), and it states ISL/OSL (MLPerf rows, ``DATASET_LENGTHS``, do not). Its
scenario maps to a load: ``offline_max`` -> every request queued at once; ``concurrency`` -> closed loop at
the printed concurrency (``STATIC_BATCH``: one wave of that many requests); ``server`` -> Poisson arrivals
at the printed rate. ``ISL_OSL_RANDOM_0.8-1.0`` lengths are uniform in [0.8, 1] x nominal,
``..._UP_TO_NOMINAL`` in [0, 1] x nominal. FP8 rows cache KV in FP8 (TensorRT-LLM doc note; MLPerf harness).
Layout: ``TPn`` (replicas = devices / n); ``DP-attn`` = attention data parallel over the devices with
experts over all of them. A row meeting a mechanism ``serving.unmodelled`` lists is left out, its flag the
reason. What was measured: output tok/s per GPU, TPOT p50, TTFT p50 (blank = not printed).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ..engines.compat import engine_key, engine_names
from ..hardware.catalog import get_hardware
from ..hardware.match import closest_device
from ..quant.format_table import gemm_kind
from ..resolve import resolve_model
from .engine_versions import version_tuple
from .fitted import fitted_for
from .run import Load, evaluate
from .schedulers import scheduler_key
from .unmodelled import not_modelled
from .worker import Parallelism

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "data" / "validation" / "serving-calibration.csv"
CSV2 = ROOT / "data" / "validation" / "serving-calibration-2.csv"   # newer engines (Dec 2025 - Jan 2026)
QUANTS = {"F16": "F16", "BF16": "F16"}           # 16-bit weights; else a format whose serving GEMMs are modelled
DEVICES = {"NVIDIA GH200 480GB": "gh200-96g"}     # the TensorRT-LLM doc's GH200 is the 96 GB HBM3 board
MAX_DEVICES = 8                                    # one server (multi-node rows are left out)
# engines whose rows here time TTFT in the benchmarking process (TensorRT-LLM's trtllm-bench / gptManagerBenchmark):
# the engine's first token, no streaming client's ``lead_tokens`` (serving.metrics.client_view)
IN_PROCESS = ("tensorrt-llm",)


@dataclass
class Case:
    id: str
    source: str
    model: str
    hardware: str
    engine: str
    quant: str
    kv_dtype: str
    tp: int
    replicas: int
    dp_attn: bool
    gpus: int
    scenario: str
    isl: int
    osl: int
    length_ratio: float
    concurrency: int
    rate_rps: float
    static: bool
    tok_s_per_gpu: float | None
    tpot_ms: float | None
    ttft_ms: float | None
    engine_version: str | None = None   # the release measured (engine_versions.toml: graphs, host overlap)
    date: str = ""                     # the measurement's month (YYYY-MM) where the file states one


def _engine(name: str) -> str | None:
    """The engine a row's column names (capabilities.toml's name or alias) where the simulator has its scheduler
    (serving/schedulers.toml); None for the rest (MLX and Ollama servers)."""
    key = engine_key(name)
    return key if key in engine_names() and scheduler_key(key) == key else None


def _num(text: str) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None


def load_cases(path=CSV) -> tuple[list[Case], dict]:
    """(cases, {reason: rows skipped})."""
    out, skipped = [], {}

    def skip(reason):
        skipped[reason] = skipped.get(reason, 0) + 1

    models: dict = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            engine = _engine(r["engine"])
            quant = QUANTS.get(r["quant"]) or (r["quant"] if gemm_kind(r["quant"]) else None)
            isl, osl = _num(r["isl"]), _num(r["osl"])
            n = int(_num(r["n_devices"]) or 1)
            if engine is None:
                skip("engine not simulated")
                continue
            if quant is None:
                skip("weight format")
                continue
            if not isl or not osl:
                skip("no ISL/OSL (dataset lengths)")
                continue
            if n > MAX_DEVICES:
                skip("more than one server")
                continue
            m = models.get(r["model"])
            if m is None:
                try:
                    m = models[r["model"]] = resolve_model(r["model"])[0].id
                except Exception:        # noqa: BLE001  an unknown model id
                    m = models[r["model"]] = ""
            if not m:
                skip("model unknown to tokspeed")
                continue
            dev = DEVICES.get(r["hardware"]) or getattr(closest_device(r["hardware"]), "id", None)
            if dev is None:
                skip("device unknown to tokspeed")
                continue
            par = r["parallel"] or f"TP{n}"
            mt = re.match(r"TP(\d+)", par)
            tp = int(mt.group(1)) if mt else n
            dp_attn = "DP-attn" in par
            if dp_attn:
                tp = 1
            if n % tp:
                skip("layout")
                continue
            par = Parallelism(tp=1, ep=n, dp=n) if dp_attn else Parallelism(tp=tp)
            flags = not_modelled(engine, r["engine_version"], par)
            if flags:                  # a mechanism the simulation lacks (serving.unmodelled): not scored
                skip(f"not modelled ({flags[0]})")
                continue
            per_gpu = _num(r["output_tok_s_per_gpu"])
            if per_gpu is None and _num(r["output_tok_s_total"]):
                per_gpu = _num(r["output_tok_s_total"]) / n
            flags = r["flags"]
            ratio = 0.8 if "ISL_OSL_RANDOM_0.8-1.0" in flags else 0.0 if "UP_TO_NOMINAL" in flags else 1.0
            scen = {"offline_max": "offline", "concurrency": "concurrency", "server": "rate"}[r["scenario"]]
            conc = int(_num(r["concurrency"]) or 0)
            rate = _num(r["request_rate"]) or 0.0
            if scen == "concurrency" and conc < 1 or scen == "rate" and rate <= 0:
                skip("load not stated")
                continue
            if scen == "rate" and rate == float("inf"):
                scen = "offline"
            kv = (r["kv_dtype"] or ("fp8" if quant == "FP8" else "f16")).lower()
            out.append(Case(r["id"], r["source"], m, dev, engine, quant, kv if kv in ("fp8", "f16", "bf16") else "f16",
                            tp, n // tp if not dp_attn else 1, dp_attn, n, scen, int(isl), int(osl), ratio, conc, rate,
                            "STATIC_BATCH" in flags, per_gpu, _num(r["tpot_ms_p50"]), _num(r["ttft_ms_p50"]),
                            (r.get("engine_version") or "").strip() or None, (r.get("date") or "").strip()))
    return out, skipped


def evaluate_case(case: Case, fitted: dict | None = None, n_requests: int | None = None, *, make_setup) -> dict:
    """Simulated {tok_s_per_gpu, tpot_ms, ttft_ms} of a case (``fitted``: gpu_scale, step_s; ``make_setup``:
    ``serving_api.make_setup``, predict's resolution)."""
    if case.engine in IN_PROCESS:
        fitted = {**(fitted if fitted is not None else fitted_for(case.engine, get_hardware(case.hardware).vendor)),
                  "lead_tokens": 0.0}
    setup = make_setup(case.model, case.hardware, case.engine, quant=case.quant, kv_dtype=case.kv_dtype, isl=case.isl,
                       osl=case.osl, length_ratio=case.length_ratio, fitted=fitted,
                       engine_version=case.engine_version if version_tuple(case.engine_version) else None)
    if case.dp_attn:
        par = Parallelism(tp=1, ep=case.gpus, dp=case.gpus)
    else:
        par = Parallelism(tp=case.tp)
    if case.scenario == "offline":
        load = Load("offline", n_requests=n_requests)
    elif case.scenario == "concurrency":
        load = Load("concurrency", concurrency=case.concurrency,
                    n_requests=case.concurrency if case.static else n_requests)
    else:
        load = Load("rate", rate_rps=case.rate_rps, n_requests=n_requests)
    c = evaluate(setup, par, case.replicas, load)
    return {"tok_s_per_gpu": c.output_tok_s_per_gpu, "tpot_ms": c.tpot_ms.p50, "ttft_ms": c.ttft_ms.p50}
