"""Run AIConfigurator's Python API on a list of questions; run by ``bench_aiconfigurator.py`` with
AIConfigurator's own interpreter (its own venv). It imports nothing of tokspeed and tokspeed never imports it.

    /tmp/aic-venv/bin/python benchmarks/aiconfigurator_driver.py < questions.json > answers.json

Input: a JSON list of ``{"fn": ..., "kw": {...}}``; output: a JSON list of answers in the same order (an answer
that failed is ``{"error": "..."}``). Functions:

- ``version``: the installed AIConfigurator version;
- ``support``: ``cli_support`` (agg, disagg) for a model, system and backend;
- ``estimate``: one ``cli_estimate`` point (agg at a batch size, or a static mode);
- ``max_throughput``: ``cli_estimate`` (agg) up the batch ladder ``LADDER`` (to the engine's ``max_bs``) while
  the KV cache holds the batch (AIConfigurator's own KV-capacity check, ``kv_cache_warning``), at each context
  token budget of ``ctx_options`` (its IFB step's prompt tokens; AIConfigurator's own search sweeps these in
  multiples of ISL); the point of most output tok/s per GPU;
- ``rate``: the smallest batch on the ladder whose throughput (seq/s x ``replicas``) reaches ``rate_rps``
  (Little's law: AIConfigurator has no arrival process), else the max-throughput point (``meets_rate`` false);
- ``slo_best``: up the batch ladder of one agg layout (at each context budget of ``ctx_options``), the point of
  most output tok/s per GPU whose TPOT (and TTFT) stay within ``tpot_ms`` (``ttft_ms``);
- ``default``: ``cli_default`` (its agg vs disagg search), the top configurations of each mode.

A model whose config AIConfigurator ships (``aiconfigurator_core/model_configs``) but no longer lists among its
default models (Mixtral) is given as a local folder holding that shipped config.json (its documented local-path
input) instead of a download (this machine has no network).

The perf-database version is resolved once per system and backend and passed on: resolving it on every call parses
the database's YAML files again (0.9 s a call; 7 ms with the version given); the answers are the same.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import sys
import time

# batch sizes tried: powers of two and the points halfway (x 1.5) up to 4,096 sequences
LADDER = sorted({2 ** k for k in range(13)} | {3 * 2 ** k for k in range(11)})
_VERSIONS: dict = {}


def _version_for(system: str, backend: str) -> str | None:
    from aiconfigurator_core.sdk.perf_database import get_latest_database_version

    key = (system, backend)
    if key not in _VERSIONS:
        _VERSIONS[key] = get_latest_database_version(system, backend)
    return _VERSIONS[key]


def _model_path(name: str) -> str:
    """``name``, or a folder with AIConfigurator's shipped config of it when it is not a default model."""
    import os
    import shutil
    import tempfile

    from aiconfigurator_core.sdk.common import get_default_models
    from aiconfigurator_core.sdk.utils import _get_model_config_path

    if name in get_default_models() or os.path.isdir(name):
        return name
    shipped = _get_model_config_path() / f"{name.replace('/', '--')}_config.json"
    if not shipped.is_file():
        return name
    folder = os.path.join(tempfile.gettempdir(), "aic-shipped-configs", name.replace("/", "--"))
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(str(shipped), os.path.join(folder, "config.json"))
    return folder


def _point(r) -> dict:
    """An EstimateResult in plain numbers."""
    raw = r.raw
    return {"bs": r.batch_size, "ttft_ms": r.ttft, "tpot_ms": r.tpot, "tok_s": raw.get("tokens/s"),
            "tok_s_per_gpu": raw.get("tokens/s/gpu"), "tok_s_per_user": raw.get("tokens/s/user"),
            "seq_s": raw.get("seq/s"), "gpus": raw.get("num_total_gpus"), "kv_full": r.kv_cache_warning is not None,
            "backend_version": r.backend_version}


def estimate(kw: dict) -> dict:
    from aiconfigurator.cli.api import cli_estimate

    kw = {**kw, "model_path": _model_path(kw["model_path"])}
    kw.setdefault("backend_version", _version_for(kw["system_name"], kw.get("backend_name", "trtllm")))
    return _point(cli_estimate(**kw))


def _ladder(kw: dict, max_bs: int = LADDER[-1]):
    """Points up the ladder, stopping after the first batch the KV cache cannot hold."""
    for bs in (b for b in LADDER if b <= max_bs):
        try:
            p = estimate({**kw, "batch_size": bs})
        except RuntimeError as e:        # OOM: the weights leave no room (a smaller batch may not either)
            yield {"error": str(e).splitlines()[0]}
            return
        yield p
        if p["kv_full"]:
            return


def max_throughput(kw: dict, max_bs: int, ctx_options: list) -> dict:
    best, err = None, None
    for ctx in ctx_options:
        for p in _ladder({**kw, "ctx_tokens": ctx}, max_bs):
            if "error" in p:
                err = p
                break
            if not p["kv_full"] and (best is None or p["tok_s_per_gpu"] > best["tok_s_per_gpu"]):
                best = {**p, "ctx_tokens": ctx}
    return best or err or {"error": "the KV cache holds no batch of one"}


def rate(kw: dict, rate_rps: float, replicas: int, max_bs: int) -> dict:
    best = None
    for p in _ladder(kw, max_bs):
        if "error" in p:
            break
        if p["kv_full"]:
            break
        if p["seq_s"] * replicas >= rate_rps:
            return {**p, "meets_rate": True}
        if best is None or p["tok_s_per_gpu"] > best["tok_s_per_gpu"]:
            best = p
    return {**best, "meets_rate": False} if best is not None else {"error": "no batch fits"}


def slo_best(kw: dict, max_bs: int, ctx_options: list, tpot_ms: float, ttft_ms: float | None) -> dict:
    best, n, err = None, 0, None
    for ctx in ctx_options:
        for p in _ladder({**kw, "ctx_tokens": ctx}, max_bs):
            if "error" in p:
                err = p
                break
            n += 1
            ok = p["tpot_ms"] <= tpot_ms and (ttft_ms is None or p["ttft_ms"] <= ttft_ms) and not p["kv_full"]
            if ok and (best is None or p["tok_s_per_gpu"] > best["tok_s_per_gpu"]):
                best = {**p, "ctx_tokens": ctx}
    return best or err or {"error": f"no batch of the layout meets the SLO ({n} tried)"}


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


AGG_COLS = ("tokens/s/gpu_cluster", "tokens/s/gpu", "tokens/s/user", "ttft", "tpot", "concurrency", "bs",
            "global_bs", "parallel", "num_total_gpus", "tp", "dp", "moe_ep")
DISAGG_COLS = ("tokens/s/gpu_cluster", "tokens/s/gpu", "tokens/s/user", "ttft", "tpot", "concurrency",
               "(p)workers", "(p)parallel", "(p)bs", "(d)workers", "(d)parallel", "(d)bs", "num_total_gpus")


def default(kw: dict) -> dict:
    from aiconfigurator.cli.api import cli_default

    kw = {**kw, "model_path": _model_path(kw["model_path"])}
    kw.setdefault("backend_version", _version_for(kw["system"], kw.get("backend", "trtllm")))
    t = time.perf_counter()
    r = cli_default(**kw)
    wall = time.perf_counter() - t
    out = {"wall_s": wall, "best": {k: _clean(v) for k, v in r.best_throughputs.items()}, "modes": {}}
    for mode, df in r.best_configs.items():
        cols = DISAGG_COLS if mode.startswith("disagg") else AGG_COLS
        out["modes"][mode] = [{c: _clean(row.get(c)) for c in cols} for _, row in df.head(3).iterrows()]
    return out


def answer(q: dict) -> dict:
    fn, kw = q["fn"], q.get("kw", {})
    if fn == "version":
        from importlib.metadata import version

        return {"version": version("aiconfigurator")}
    if fn == "support":
        from aiconfigurator.cli.api import cli_support

        agg, dis = cli_support(kw["model_path"], kw["system"], backend=kw["backend"])
        return {"agg": bool(agg), "disagg": bool(dis)}
    if fn == "estimate":
        return estimate(kw)
    if fn == "max_throughput":
        return max_throughput(kw, q.get("max_bs", LADDER[-1]), q.get("ctx_options") or [kw.get("isl", 1024)])
    if fn == "rate":
        return rate(kw, q["rate_rps"], q.get("replicas", 1), q.get("max_bs", LADDER[-1]))
    if fn == "slo_best":
        return slo_best(kw, q.get("max_bs", LADDER[-1]), q.get("ctx_options") or [kw.get("isl", 1024)], q["tpot_ms"],
                        q.get("ttft_ms"))
    if fn == "default":
        return default(kw)
    return {"error": f"unknown fn {fn!r}"}


def main() -> int:
    questions = json.load(sys.stdin)
    logging.disable(logging.WARNING)
    out = []
    for q in questions:
        t = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sys.stderr):      # AIConfigurator prints tables; stdout is ours
                a = answer(q)
        except Exception as e:            # noqa: BLE001  one failed question is an answer, not the end
            a = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}
        out.append({**a, "wall_s": a.get("wall_s", time.perf_counter() - t)})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
