"""Measured decode speed beside tokspeed's prediction for the same model, hardware and batch, and the MBU.

For each concurrency phase ``c`` (batch = c sequences decoding together), with the phase's mean
prompt and output lengths:
- ``predicted_tok_s`` / ``bound_tok_s``: ``tokspeed.predict(..., batch=c).decode`` (per sequence);
- ``measured_tok_s``: the phase's ``per_user_decode_tok_s`` (mean over requests of
  (output_tokens - 1) / decode_s), i.e. decode steps per second as one sequence sees them;
- ``mbu`` (memory-bandwidth utilisation) = measured steps/s x bytes read per step / peak bandwidth,
  where bytes per step = ``decode.bytes_per_token`` of the prediction at that batch.
The server's own overheads (HTTP, detokenising, scheduling) are inside the measured number, so MBU
here is a lower bound on the engine's kernel-level MBU.
"""

from __future__ import annotations


def compare_phases(summary: dict, model: str, hardware: str, *, quant: str | None = None,
                   engine: str | None = None) -> dict:
    from ..hardware.catalog import get_hardware
    from ..predict import predict

    hw = get_hardware(hardware)
    bandwidth_Bps = hw.bandwidth_gbps * 1e9
    opts = {k: v for k, v in (("quant", quant), ("engine", engine)) if v}
    rows = []
    for ph in summary.get("phases", []):
        c = ph.get("concurrency")
        if not c or ph.get("rate_rps"):
            continue  # a rate phase has no fixed batch to predict for
        st = ph.get("stats", {})
        prompt = round(st["prompt_tokens"]["mean"]) if "prompt_tokens" in st else 0
        gen = round(st["output_tokens"]["mean"]) if "output_tokens" in st else 1
        p = predict(model, hardware, prompt=max(prompt, 1), gen=max(gen, 1), batch=c, **opts).to_dict()
        d = p["decode"]
        measured = ph.get("per_user_decode_tok_s")
        row = {"phase": ph.get("phase"), "concurrency": c, "prompt": prompt, "gen": gen,
               "measured_tok_s": measured, "measured_output_tok_s": ph.get("output_tok_s"),
               "predicted_tok_s": d.get("tok_s"), "bound_tok_s": d.get("bound_tok_s"),
               "bytes_per_token": d.get("bytes_per_token"), "bandwidth_gbps": hw.bandwidth_gbps,
               "mbu": None, "measured_over_predicted": None}
        if measured and d.get("bytes_per_token"):
            row["mbu"] = measured * d["bytes_per_token"] / bandwidth_Bps
        if measured and d.get("tok_s"):
            row["measured_over_predicted"] = measured / d["tok_s"]
        rows.append(row)
    return {"model": model, "hardware": hw.id, "quant": quant, "engine": engine, "phases": rows}
