"""Measured stage times from a run file (``tokspeed measure -o RUN.json``), to sit beside the predicted ones.

Keys read (everything else in the file is ignored), all times in seconds per decode step unless the key
ends in ``_ms``::

    {"stages": {"<stage key or label>": seconds, ...},        # or a list of
     "stages": [{"key"|"name"|"stage": "...", "seconds"|"ms": ...}, ...],
     "decode": {"ms_per_token": ..., "stages": {...}}}        # stages may also sit under "decode"

Stage keys are the ``key`` values of ``tokspeed explain --json`` (``qkv``, ``attention``, ``ffn``,
``lm_head``, ``launch``, ``sampling`` ...); labels ("QKV projection") match case-insensitively.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError


@dataclass
class Measured:
    path: str
    stages: dict = field(default_factory=dict)     # lower-case key or label -> seconds
    step_s: float | None = None                    # measured decode step time


def _seconds(entry: dict) -> float | None:
    for k, scale in (("seconds", 1.0), ("s", 1.0), ("ms", 1e-3), ("seconds_ms", 1e-3), ("time_s", 1.0)):
        v = entry.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v) * scale
    return None


def _stage_map(raw) -> dict:
    out = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[str(k).lower()] = float(v) * (1e-3 if str(k).endswith("_ms") else 1.0)
            elif isinstance(v, dict) and _seconds(v) is not None:
                out[str(k).lower()] = _seconds(v)
    elif isinstance(raw, list):
        for e in raw:
            if isinstance(e, dict):
                name = e.get("key") or e.get("name") or e.get("stage")
                s = _seconds(e)
                if name is not None and s is not None:
                    out[str(name).lower()] = s
    return {k.removesuffix("_ms"): v for k, v in out.items()}


def load_measured(path) -> Measured:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"no such measurement file: {path}", "write one with `tokspeed measure ... -o RUN.json`")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not a JSON run file ({e})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: a run file is a JSON object")
    decode = data.get("decode") if isinstance(data.get("decode"), dict) else {}
    stages = _stage_map(data.get("stages")) or _stage_map(decode.get("stages"))
    step = decode.get("ms_per_token")
    step_s = float(step) / 1e3 if isinstance(step, (int, float)) and not isinstance(step, bool) else None
    if not stages and step_s is None:
        raise UserError(f"{path}: no stage times and no decode.ms_per_token in it")
    return Measured(str(p), stages, step_s)


def attach(journey, measured: Measured) -> None:
    """Set ``measured_s`` on the stages the file names (by key or label)."""
    for st in journey.stages:
        for name in (st.key.lower(), st.label.lower()):
            if name in measured.stages:
                st.measured_s = measured.stages[name]
                break
