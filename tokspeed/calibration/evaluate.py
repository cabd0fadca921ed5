"""Score predictions against calibration rows: predicted tok/s through ``tokspeed.predict.predict``
exactly as a user would call it, with each row's own prompt, gen, context depth and batch."""

from __future__ import annotations

from dataclasses import replace

from ..engines.era_builds import at_build, with_row_attention
from ..engines.profile import get_engine
from ..predict import predict


def answer_kwargs(row) -> dict:
    """``predict`` options for a row beyond model/device/quant/engine/workload: its devices as a layer split, its
    prompt micro-batches (-ub / -b)."""
    out = {"ubatch": row.ubatch, "n_batch": row.n_batch}
    if row.n_devices > 1:
        out.update(gpus=row.n_devices, parallel="tp" if row.parallel == "tp" else "split")
    return out


def at_row_build(profile, row, eras: dict | None = None):
    """``profile`` (an EngineProfile of the row's era) as the build the row ran: its ``build_month`` the row's
    (``CalibrationRow.month``), so the kernels chosen by month within an era are the row's, and the costs of a
    kernel path that changed within the era the newest era's (``era_builds.at_build``; ``eras``: the fit's trial
    profiles by era), with attention fused or not as its flags state (``-fa 1``: ``era_builds.with_row_attention``);
    unchanged for a row without either or a profile that is not an EngineProfile."""
    if not hasattr(profile, "build_month"):
        return profile
    if row.month and profile.build_month != row.month:
        profile = at_build(replace(profile, build_month=row.month), row.hw, eras)
    return with_row_attention(profile, row.flash_attention, eras)      # the -fa its flags state


def predicted(row, engine=None):
    """``predict``'s answer for this row, at the build it ran (``at_row_build``). ``engine``: a name or EngineProfile
    (default: the row's engine as shipped for the row's build month, i.e. priors overlaid with fitted.toml)."""
    engine = at_row_build(engine or get_engine(row.engine, row.hw, version=row.month or row.era or None), row)
    return predict(row.model, row.hw, quant=row.quant, engine=engine, prompt=row.prompt,
                   gen=row.gen if row.kind == "decode" else 0, context=row.context, batch=row.batch,
                   **answer_kwargs(row))


def metric_tok_s(p, row) -> float:
    """The figure of prediction ``p`` that ``row`` measured."""
    if row.metric == "prefill":
        return p.prefill.tok_s
    if row.metric == "decode_aggregate":
        return p.decode.aggregate_tok_s
    return p.decode.tok_s


def stated_band_pct(p, row) -> float:
    """The band (%) prediction ``p`` states for ``row``'s metric: its range's low end is tok/s / (1 + band)."""
    part = p.prefill if row.metric == "prefill" else p.decode
    return (part.tok_s / part.tok_s_low - 1) * 100 if part.tok_s_low else float("nan")


def predicted_tok_s(row, engine=None) -> float:
    """What ``predict`` says for this row's metric (``predicted``'s ``engine``)."""
    return metric_tok_s(predicted(row, engine), row)


def error_pct(predicted: float, measured: float) -> float:
    """Signed % error of a prediction relative to the measurement."""
    return (predicted - measured) / measured * 100.0
