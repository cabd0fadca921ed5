"""Measured stage times from a run file, to sit beside the predicted ones.

Two forms are read:

1. A ``tokspeed measure -o RUN.json`` file (schema ``tokspeed.run``, ``tokspeed/measure/run_file.py``): from
   the point whose batch matches and whose context is closest, ``decode_ms_per_token`` and
   ``stages_ms {embedding, attention, ffn, lm_head, sampling}`` — one instrumented decode step timed per
   block (each layer's attention block incl. its norm and residual; its FFN/MoE block; final norm + LM head;
   sampling on the CPU). These are compared with the predicted stages summed into the same blocks, each
   with the kernel launches of its stages (a measured block includes the time to launch its kernels).

2. A hand-written file with finer stages (keys read; times in seconds unless the key ends in ``_ms``)::

       {"stages": {"<stage key or label>": seconds, ...}        # or a list of
        "stages": [{"key"|"name"|"stage": "...", "seconds"|"ms": ...}, ...],
        "decode": {"ms_per_token": ..., "stages": {...}}}

   Stage keys are those of ``tokspeed explain --json`` (``qkv``, ``attention``, ``ffn``, ``lm_head`` ...);
   labels ("QKV projection") match case-insensitively.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..userfile import read_json_object

RUN_SCHEMA = "tokspeed.run"
# measured block -> the explain stages it covers
BLOCKS = {
    "embedding": ("embedding",),
    "attention": ("attn_norm", "qkv", "rope", "attention", "o_proj", "residual_attn"),
    "ffn": ("ffn_norm", "ffn", "ffn_act", "router", "experts", "experts_act", "shared", "shared_act", "residual_ffn"),
    "lm_head": ("final_norm", "lm_head"),
    "sampling": ("sampling",),
}


@dataclass
class Measured:
    path: str
    stages: dict = field(default_factory=dict)     # lower-case stage key or label -> seconds (fine form)
    blocks: dict = field(default_factory=dict)     # block -> seconds (run-file form)
    step_s: float | None = None                    # measured decode step time
    point: dict = field(default_factory=dict)      # the run-file point compared: batch, context, backend
    comparison: list = field(default_factory=list)  # [{block, predicted_s, measured_s}] after attach()
    flash_attention: bool | None = None             # a llama.cpp run's -fa (run file settings), else None

    def to_dict(self) -> dict:
        return {"path": self.path, "step_s": self.step_s, "point": self.point, "blocks": self.comparison,
                "stages": self.stages}


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _seconds(entry: dict) -> float | None:
    for k, scale in (("seconds", 1.0), ("s", 1.0), ("ms", 1e-3), ("time_s", 1.0)):
        v = _num(entry.get(k))
        if v is not None:
            return v * scale
    return None


def _stage_map(raw) -> dict:
    out = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            k = str(k).lower()
            if _num(v) is not None:
                out[k.removesuffix("_ms")] = _num(v) * (1e-3 if k.endswith("_ms") else 1.0)
            elif isinstance(v, dict) and _seconds(v) is not None:
                out[k] = _seconds(v)
    elif isinstance(raw, list):
        for e in raw:
            if isinstance(e, dict):
                name = e.get("key") or e.get("name") or e.get("stage")
                s = _seconds(e)
                if name is not None and s is not None:
                    out[str(name).lower()] = s
    return out


def _from_run(p: Path, data: dict, context: int, batch: int) -> Measured:
    points = [pt for pt in data.get("points") or [] if isinstance(pt, dict)]
    if not points:
        raise UserError(f"{p}: the run file has no measured points")
    same = [pt for pt in points if pt.get("batch") == batch] or points
    pt = min(same, key=lambda x: abs((_num(x.get("context")) or 0) - context))
    raw = pt.get("stages_ms") if isinstance(pt.get("stages_ms"), dict) else {}
    blocks = {k: _num(v) / 1e3 for k, v in raw.items() if k in BLOCKS and _num(v) is not None}
    step = _num(pt.get("decode_ms_per_token"))
    if not blocks and step is None:
        raise UserError(f"{p}: the run file's point has no decode time and no stages_ms")
    point = {"batch": pt.get("batch"), "context": pt.get("context"), "backend": data.get("backend", ""),
             "device": data.get("device", ""), "quant": data.get("quant", "")}
    settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    fa = settings.get("flash_attention") if data.get("backend") == "llama.cpp" else None
    return Measured(str(p), blocks=blocks, step_s=step / 1e3 if step is not None else None, point=point,
                    flash_attention=fa if isinstance(fa, bool) else None)


def load_measured(path, context: int = 0, batch: int = 1) -> Measured:
    p, data = read_json_object(path, "measurement file", "write one with `tokspeed measure MODEL -o RUN.json`")
    if data.get("schema") == RUN_SCHEMA:
        return _from_run(p, data, context, batch)
    decode = data.get("decode") if isinstance(data.get("decode"), dict) else {}
    stages = _stage_map(data.get("stages")) or _stage_map(decode.get("stages"))
    step = _num(decode.get("ms_per_token"))
    if not stages and step is None:
        raise UserError(f"{path}: no stage times and no decode.ms_per_token in it")
    return Measured(str(p), stages=stages, step_s=step / 1e3 if step is not None else None)


def attach(journey, measured: Measured) -> None:
    """Set ``measured_s`` on the stages the file names, and compare blocks for a run file."""
    for st in journey.stages:
        for name in (st.key.lower(), st.label.lower()):
            if name in measured.stages:
                st.measured_s = measured.stages[name]
                break
    by_key = {s.key: s for s in journey.stages}
    measured.comparison = []
    for block, keys in BLOCKS.items():
        if block not in measured.blocks:
            continue
        stages = [by_key[k] for k in keys if k in by_key]
        pred = sum(s.seconds + (s.kernels * journey.launch_s if s.phase != "cpu" else 0.0) for s in stages)
        measured.comparison.append({"block": block, "predicted_s": pred, "measured_s": measured.blocks[block]})
