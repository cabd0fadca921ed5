"""A calibration row's numbers through the typed gate (``guard.typed``), before anything reads them.

A calibration CSV is a file from outside (a user's ``TOKSPEED_CALIBRATION_CSV`` included). Its counts (devices,
prompt, generated and cached tokens, batch) must be whole numbers in ``[0, MAX_TOKENS]``, its device figures and file
size finite numbers >= 0, and the llama.cpp options its note states (``-ub``, ``-b``, ``-t``) whole numbers >= 1
within the same range; ``tok_s`` has its own gate (``rows.measured_rate``). A cell that fails is blanked and names
the row's skip reason, so the row is kept and accounted for, never scored, and no word, ``nan``, ``inf``, ``1e400``,
negative or 5,000-digit number reaches ``int()``, ``float()``, a ``Workload`` or the fit. A prompt of more
micro-batches than ``workload.MAX_PREFILL_PASSES`` is skipped the same way (the fit walks every one).
"""

from __future__ import annotations

import re

from ..guard.typed import count, rate
from ..workload import MAX_PREFILL_PASSES, MAX_TOKENS, prefill_pass_count

COUNT_COLUMNS = ("n_devices", "prompt_tokens", "gen_tokens", "context_depth", "batch")
NUMBER_COLUMNS = ("bandwidth_GBps", "fp16_TFLOPS", "memory_GB", "model_bytes")
_WHOLE = re.compile(r"[+]?\d{1,20}")            # more digits than 2**63 has are no count (int() is never reached)
_REAL = re.compile(r"[+]?(\d{1,20}(\.\d{0,20})?|\.\d{1,20})([eE][+-]?\d{1,3})?")


def cell_count(text: str, lo: int = 0):
    """A cell (or a note's option) as a count in ``[lo, MAX_TOKENS]``; "" for a blank cell; None when it is not one."""
    t = (text or "").strip()
    if not t:
        return ""
    if _WHOLE.fullmatch(t):
        v = count(int(t), MAX_TOKENS)
    elif _REAL.fullmatch(t):                    # "512.0": a whole number written as a real one
        v = count(float(t), MAX_TOKENS)
    else:
        return None
    return v if v is not None and v >= lo else None


def cell_number(text: str):
    """A cell as a finite number >= 0 within 2**53; "" for a blank cell; None when it is not one."""
    t = (text or "").strip()
    if not t:
        return ""
    return rate(float(t)) if _REAL.fullmatch(t) else None


def gated(r: dict) -> tuple[dict, str]:
    """``r`` with each count and number cell the gate refuses blanked, and the skip reason naming the first ("" when
    every cell passes)."""
    out, reason = dict(r), ""
    for col, check in [(c, cell_count) for c in COUNT_COLUMNS] + [(c, cell_number) for c in NUMBER_COLUMNS]:
        if col in out and check(out[col] or "") is None:
            out[col] = ""
            reason = reason or f"{col} not a {'whole' if check is cell_count else 'finite'} number in range"
    return out, reason


def note_count(pattern: re.Pattern, note: str, default: int | None):
    """The count a note's option states (``-ub 2048``: ``pattern``'s group 1) when it is one >= 1; ``default`` when the
    note states none; None when it states one the gate refuses (``-ub 0``, 5,000 digits)."""
    m = pattern.search(note or "")
    if not m:
        return default
    v = cell_count(m.group(1), lo=1)
    return v if isinstance(v, int) else None


def too_many_passes(prompt: int, ubatch: int, n_batch: int) -> str:
    """The skip reason of a prompt the fit would walk in more than ``MAX_PREFILL_PASSES`` micro-batches, else ""."""
    n = prefill_pass_count(prompt, ubatch, n_batch)
    return f"prompt of {n:,} micro-batches (at most {MAX_PREFILL_PASSES:,})" if n > MAX_PREFILL_PASSES else ""
