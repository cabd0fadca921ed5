"""RUN.json: one measurement run, versioned, written by `tokspeed measure` and read by
`tokspeed compare-runs` and the reports.

Schema ``tokspeed.run`` version 1 (keys in order):
  schema, schema_version, tokspeed_version, created (UTC ISO-8601),
  machine {cpu_model, logical_cores, physical_cores, ram_bytes, available_ram_bytes, os, gpus[], load_average},
  hardware {id, name, bandwidth_gbps, fp16_tflops, fp32_tflops, profile},
  model {id, source (random|safetensors|gguf), path, n_params},
  backend, device, quant, settings {contexts, batches, prompt, gen, threads, warmup},
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
from pathlib import Path

from ..errors import UserError

SCHEMA = "tokspeed.run"
SCHEMA_VERSION = 1


def new_run(**fields) -> dict:
    from .. import __version__

    run = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "tokspeed_version": __version__,
           "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    run.update({"machine": {}, "hardware": {}, "model": {}, "backend": "", "device": "", "quant": "",
                "settings": {}, "counted": "", "points": [], "calibration": None, "warnings": []})
    run.update(fields)
    return run


def write_run(run: dict, path) -> Path:
    from ..userfile import write_text

    return write_text(path, json.dumps(run, indent=2, ensure_ascii=False) + "\n", "run file")


def read_run(path) -> dict:
    from ..userfile import read_json_object

    p, run = read_json_object(path, "run file", "write one with `tokspeed measure MODEL -o RUN.json`")
    if run.get("schema") != SCHEMA:
        raise UserError(f"{p}: not a tokspeed run file (no \"schema\": \"{SCHEMA}\")")
    v = run.get("schema_version")
    if not isinstance(v, int) or v > SCHEMA_VERSION:
        raise UserError(f"{p}: run file schema version {v!r} is newer than this tokspeed reads ({SCHEMA_VERSION})",
                        "upgrade tokspeed")
    if not isinstance(run.get("points"), list):
        raise UserError(f"{p}: run file has no points list")
    return run
