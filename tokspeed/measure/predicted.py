"""The prediction to set next to a measured point: the analytic core's decode bound for the same
model, quant, depth and batch on the same hardware profile, then this machine's calibration
(``calibrate.py``) if one is stored: t_step = bytes_step / (bandwidth * eta) + overhead."""

from __future__ import annotations

# Engine model of the analytic core used for the uncalibrated prediction of each backend:
# the reference decoder has no engine profile of its own, so it is predicted at the ideal bound.
ENGINE_FOR_BACKEND = {"torch": "ideal", "llama.cpp": "llama.cpp"}


def _fallback_bytes(spec, elt_bytes: float, kv_elt_bytes: float, context: int, gen: int, batch: int) -> float:
    """Bytes per decode step from the spec alone, used only when ``tokspeed.predict`` is absent:
    active parameters less the embedding table plus one row of it (the whole table again for a tied
    LM head), plus K and V of every layer at the average depth of the generated tokens."""
    counts = spec.param_counts()
    weights = (spec.n_active_params - counts["embedding"] + spec.d_model) * elt_bytes
    if spec.tied_embeddings:
        weights += counts["embedding"] * elt_bytes
    depth = context + (gen - 1) / 2 + 1
    kv = 2 * spec.n_layers * spec.kv_dim * depth * kv_elt_bytes * batch
    return weights + kv


def predict_point(spec, hardware, backend: str, quant: str, context: int, gen: int, batch: int,
                  prompt: int, calibration=None, model_arg=None) -> dict:
    """{bound_tok_s, tok_s, bytes_per_step, engine, source}. ``tok_s`` is the engine model's
    expectation, or the calibrated one when ``calibration`` is given."""
    bw = hardware.bandwidth_gbps * 1e9
    engine = ENGINE_FOR_BACKEND.get(backend, "ideal")
    try:
        from ..predict import predict

        p = predict(model_arg or spec, hardware, quant=quant, engine=engine, prompt=prompt, gen=gen,
                    context=context, batch=batch).to_dict()
        dec = p["decode"]
        bound, tok_s = float(dec["bound_tok_s"]), float(dec["tok_s"])
        bytes_step = bw * batch / bound
        source = f"tokspeed.predict(engine={engine!r})"
    except ImportError:
        elt = {"F32": 4, "BF16": 2, "F16": 2}.get(quant.upper(), 2)
        kv_elt = elt if backend == "torch" else 2
        bytes_step = _fallback_bytes(spec, elt, kv_elt, context, gen, batch)
        bound = tok_s = batch * bw / bytes_step
        source = "bandwidth / bytes (tokspeed.predict unavailable)"
    out = {"bound_tok_s": bound, "tok_s": tok_s, "bytes_per_step": bytes_step, "engine": engine, "source": source}
    if calibration is not None:
        out["uncalibrated_tok_s"] = tok_s
        out["tok_s"] = batch / calibration.seconds_per_token(bytes_step)
        out["source"] += f" + calibration(eta={calibration.eta_memory:.3f}, overhead={calibration.overhead_s * 1e3:.2f} ms)"
    return out
