"""RUN.json: one measurement run, versioned, written by `tokspeed measure` and read by
`tokspeed compare-runs` and the reports.

Schema ``tokspeed.run`` version 1 (keys in order):
  schema, schema_version, tokspeed_version, created (UTC ISO-8601),
  machine {cpu_model, logical_cores, physical_cores, ram_bytes, available_ram_bytes, os, gpus[], load_average},
  hardware {id, name, bandwidth_gbps, fp16_tflops, fp32_tflops, profile},
  model {id, source (random|safetensors|gguf), path, n_params},
  backend, device, quant, settings {contexts, batches, prompt, gen, threads, warmup},
  engine_version (what ran it: "torch 2.13.0", "llama-cpp-python 0.3.16"),
  engine_build (torch: the CUDA it was built for; llama.cpp: llama_print_system_info()),
  counted (what the bytes per token include, in words),
  points [ {batch, context, prompt, gen, prefill_tok_s, prefill_s, decode_tok_s (mean over the steps),
            decode_tok_s_median, decode_ms_per_token,
            decode_step {median_s, min_s, max_s, repeats, warmup, spread, unstable},
            weight_bytes_per_token, kv_bytes_per_token, bytes_per_token, achieved_gbps, mbu,
            flops_per_token, mfu, stages_ms {embedding, attention, ffn, lm_head, sampling},
            predicted {bound_tok_s, tok_s, bytes_per_token, source}, error_pct} ],
  calibration {backend, eta_memory, overhead_s, ...} or null,
  warnings [str]
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

from .. import __version__
from ..errors import UserError
from ..userfile import read_json_object, write_text

SCHEMA = "tokspeed.run"
SCHEMA_VERSION = 1


def new_run(**fields) -> dict:
    run = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "tokspeed_version": __version__,
           "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    run.update({"machine": {}, "hardware": {}, "model": {}, "backend": "", "device": "", "quant": "",
                "settings": {}, "engine_version": "", "engine_build": "", "counted": "", "points": [], "calibration": None, "warnings": []})
    run.update(fields)
    return run


def write_run(run: dict, path) -> Path:
    """Through ``guard.outputs.write_file``, whose writer masks secrets (a model path or URL with credentials,
    an HF token in a URL)."""
    return write_text(path, json.dumps(run, indent=2, ensure_ascii=False) + "\n", "run file")


def read_run(path) -> dict:
    p, run = read_json_object(path, "run file", "write one with `tokspeed measure MODEL -o RUN.json`")
    if run.get("schema") != SCHEMA:
        raise UserError(f"{p}: not a tokspeed run file (no \"schema\": \"{SCHEMA}\")")
    v = run.get("schema_version")
    if not isinstance(v, int) or v > SCHEMA_VERSION:
        raise UserError(f"{p}: run file schema version {v!r} is newer than this tokspeed reads ({SCHEMA_VERSION})",
                        "upgrade tokspeed")
    if not isinstance(run.get("points"), list):
        raise UserError(f"{p}: run file has no points list")
    check_types(p, run)
    return run


# what the readers of a run file (compare-runs, explain --measured, the plots) use, by type
_TOP = {"created": str, "engine_version": str, "backend": str, "device": str, "quant": str, "model": dict, "hardware": dict,
        "settings": dict, "warnings": list}
_REQUIRED = ("created", "backend", "device", "quant", "model", "hardware")   # what every reader shows
_POINT_INT = ("batch", "context")
_POINT_NUM = ("prefill_tok_s", "prefill_s", "decode_tok_s_median", "decode_ms_per_token", "mbu", "mfu",
              "achieved_gbps", "bytes_per_token", "error_pct")


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_types(p, run: dict) -> None:
    """A file with the right schema but wrong types (a string speed, a list as context) is one UserError
    naming the field, not a KeyError or TypeError in whatever reads it next."""
    for k, t in _TOP.items():
        if k in _REQUIRED and k not in run:
            raise UserError(f"{p}: run file field {k} is missing", "is this a run file from `tokspeed measure`?")
        if k in run and not isinstance(run[k], t):
            raise UserError(f"{p}: run file field {k} should be a {t.__name__}, got {type(run[k]).__name__}")
    if not isinstance(run["model"].get("id"), str):
        raise UserError(f"{p}: run file field model.id should be a string")
    for i, pt in enumerate(run["points"]):
        where = f"{p}: run file points[{i}]"
        if not isinstance(pt, dict):
            raise UserError(f"{where} should be an object, got {type(pt).__name__}")
        for k in _POINT_INT:
            v = pt.get(k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise UserError(f"{where}.{k} should be a whole number >= 0, got {str(v)[:40]!r}")
        v = pt.get("decode_tok_s")
        if v is not None and (not _is_num(v) or v <= 0):
            raise UserError(f"{where}.decode_tok_s should be a positive number, got {str(v)[:40]!r}")
        for k in _POINT_NUM:
            if pt.get(k) is not None and not _is_num(pt[k]):
                raise UserError(f"{where}.{k} should be a number, got {str(pt[k])[:40]!r}")
        if pt.get("stages_ms") is not None and not isinstance(pt["stages_ms"], dict):
            raise UserError(f"{where}.stages_ms should be an object")
