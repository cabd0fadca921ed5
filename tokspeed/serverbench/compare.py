"""Measured decode speed beside tokspeed's prediction for the same model, hardware and batch, and the MBU.

For each concurrency phase ``c`` (batch = c sequences decoding together), with the phase's mean
prompt and output lengths:
- ``predicted_tok_s`` / ``bound_tok_s``: ``tokspeed.predict(..., batch=c).decode`` (per sequence);
- ``measured_tok_s``: the phase's ``per_user_decode_tok_s`` (mean over requests of
  (output_tokens - 1) / decode_s), i.e. decode steps per second as one sequence sees them;
- ``mbu`` (memory-bandwidth utilisation) = measured steps/s x bytes read per step / peak bandwidth.
  ``decode.bytes_per_token`` is per generated token (a step's bytes / batch), so bytes per step =
  c x bytes_per_token, and MBU = measured_tok_s x c x bytes_per_token / bandwidth.
The server's own overheads (HTTP, detokenising, scheduling) are inside the measured number, so MBU
here is a lower bound on the engine's kernel-level MBU.

Aggregate output throughput (what the report draws over the measured curve), from tokspeed's serving
model: a concurrency phase c is batch c, ``predicted_output_tok_s`` = c x per-sequence tok/s (the
batch curve of ``tokspeed.serving.curve``); a rate phase R is ``continuous_batching`` at R requests/s
(steady state: R x output tokens per request, or none when the rate is beyond the setup).

``simulated_*`` (what the report draws over the measured curve when present): the step-level scheduler
simulation (``tokspeed.serving.overlay``) of the level, one engine instance on one device, with the prompt and
output lengths the run's requests actually had (``records``; the level's means when there are none):
``simulated_output_tok_s``, ``simulated_ttft_ms_p50``, ``simulated_tpot_ms_p50``; ``simulation_error`` says why
there is none.
"""

from __future__ import annotations

from ..hardware.catalog import get_hardware
from ..predict import predict
from ..serving.curve import continuous_batching
from ..serving.overlay import phase_lengths
from ..serving_api import overlay_phase


def compare_phases(summary: dict, model: str, hardware: str, *, quant: str | None = None,
                   engine: str | None = None, records=None) -> dict:
    hw = get_hardware(hardware)
    bandwidth_Bps = hw.bandwidth_bytes_s
    opts = {k: v for k, v in (("quant", quant), ("engine", engine)) if v}
    rows = []
    p_quant, p_engine = quant, engine
    for ph in summary.get("phases", []):
        c = ph.get("concurrency")
        if ph.get("rate_rps"):
            row = _rate_row(ph, model, hw, opts)
            if row:
                rows.append(_simulated(row, ph, records, model, hw, quant, engine))
            continue
        if not c:
            continue
        st = ph.get("stats", {})
        # the server's prompt count when it gave one, else the target the prompts were built for
        prompt_stat = st.get("prompt_tokens") or st.get("target_prompt_tokens") or {"mean": 1}
        prompt = max(round(prompt_stat["mean"]), 1)
        gen = max(round((st.get("output_tokens") or {"mean": 1})["mean"]), 1)
        p = predict(model, hw, prompt=prompt, gen=gen, batch=c, **opts).to_dict()
        d = p["decode"]
        p_quant, p_engine = p.get("quant", quant), p.get("engine", engine)
        measured = ph.get("per_user_decode_tok_s")
        row = {"phase": ph.get("phase"), "concurrency": c, "prompt": prompt, "gen": gen,
               "measured_tok_s": measured, "measured_output_tok_s": ph.get("output_tok_s"),
               "predicted_tok_s": d.get("tok_s"), "bound_tok_s": d.get("bound_tok_s"),
               "predicted_output_tok_s": c * d["tok_s"] if d.get("tok_s") else None,
               "bytes_per_token": d.get("bytes_per_token"), "bytes_per_step": None,
               "bandwidth_gbps": hw.bandwidth_gbps,
               "mbu": None, "measured_over_predicted": None}
        if d.get("bytes_per_token"):
            row["bytes_per_step"] = c * d["bytes_per_token"]
            if measured:
                row["mbu"] = measured * row["bytes_per_step"] / bandwidth_Bps
                if row["mbu"] > 1:      # not a measurement (tokspeed.measure.mbu): shown as none, said why
                    row["note"] = (f"MBU not shown: it would be {row['mbu']:.0%}, and the server cannot read this "
                                   "many bytes per token; it is not running this model/quant on this hardware")
                    row["mbu"] = None
        if measured and d.get("tok_s"):
            row["measured_over_predicted"] = measured / d["tok_s"]
        rows.append(_simulated(row, ph, records, model, hw, quant, engine))
    return {"model": model, "hardware": hw.id, "quant": p_quant, "engine": p_engine, "phases": rows}


def _lengths(ph: dict) -> tuple[int, int]:
    st = ph.get("stats", {})
    prompt_stat = st.get("prompt_tokens") or st.get("target_prompt_tokens") or {"mean": 1}
    return max(round(prompt_stat["mean"]), 1), max(round((st.get("output_tokens") or {"mean": 1})["mean"]), 1)


def _rate_row(ph: dict, model: str, hw, opts: dict) -> dict | None:
    """A rate phase: the steady state of continuous batching at its arrival rate."""
    prompt, gen = _lengths(ph)
    steps: dict[int, float] = {}

    def step_s(b: int) -> float:
        if b not in steps:
            steps[b] = 1.0 / predict(model, hw, prompt=prompt, gen=gen, batch=b, **opts).to_dict()["decode"]["tok_s"]
        return steps[b]

    one = predict(model, hw, prompt=prompt, gen=gen, **opts).to_dict()
    if not one["prefill"].get("seconds"):
        return {"phase": ph.get("phase"), "rate_rps": ph["rate_rps"], "prompt": prompt, "gen": gen,
                "measured_tok_s": ph.get("per_user_decode_tok_s"), "measured_output_tok_s": ph.get("output_tok_s"),
                "predicted_tok_s": None, "predicted_output_tok_s": None, "bound_tok_s": None, "mbu": None,
                "measured_over_predicted": None, "stable": None,
                "reason": "no prefill prediction for this hardware (no FLOP/s figure)"}
    pf = one["prefill"]["seconds"] / prompt
    max_batch = max(int(one["memory"].get("max_batch") or 1), 1)
    cb = continuous_batching(step_s, pf, prompt, gen, float(ph["rate_rps"]), max_batch)
    return {"phase": ph.get("phase"), "rate_rps": ph["rate_rps"], "prompt": prompt, "gen": gen,
            "measured_tok_s": ph.get("per_user_decode_tok_s"), "measured_output_tok_s": ph.get("output_tok_s"),
            "predicted_tok_s": cb.get("per_user_tok_s"), "predicted_output_tok_s": cb.get("aggregate_tok_s"),
            "bound_tok_s": None, "mbu": None, "measured_over_predicted": None,
            "stable": cb["stable"], "reason": cb.get("reason")}



def _simulated(row: dict, ph: dict, records, model, hw, quant, engine) -> dict:
    """``row`` with the scheduler simulation of its level (``serving.overlay``)."""
    try:
        sizes = phase_lengths(records, ph.get("phase"))
        row["simulated_lengths"] = "recorded" if sizes else "mean"
        sizes = sizes or [(row["prompt"], row["gen"])]
        sim = overlay_phase(model, hw, quant, engine, sizes, concurrency=int(ph.get("concurrency") or 1),
                             rate_rps=float(ph.get("rate_rps") or 0.0))
    except Exception as e:  # the simulation must not cost the run its other figures
        row["simulation_error"] = f"{type(e).__name__}: {e}"
        return row
    row.update({f"simulated_{k}": v for k, v in sim.items() if k != "requests"})
    return row
