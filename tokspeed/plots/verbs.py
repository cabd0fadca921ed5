"""What ``--plot FILE`` draws for each verb, from the objects the verb already computed."""

from __future__ import annotations

from ..errors import UserError
from ..explain.journey import build_journey
from .canvas import save
from .context import context_figure
from .hardware_bars import hardware_figure
from .measured import measured_figure
from .memory import prediction_figure


def hw_info(hw) -> dict:
    """Name, bandwidth and matmul TFLOPS (None when the device has no published FLOP/s figure)."""
    return {"name": hw.name, "bandwidth_gbps": hw.bandwidth_gbps,
            "matmul_tflops": hw.matmul_flops / 1e12 if hw.matmul_flops else None}


def prediction_journeys(pred) -> list[dict]:
    """Decode (and, with a prompt, prefill) journeys of a Prediction, for the roofline."""
    modes = ["decode"] + (["prefill"] if pred.prompt else [])
    return [build_journey(pred, m).to_dict() for m in modes]


def plot_prediction(pred, path):
    return save(prediction_figure(pred.to_dict(), hw_info(pred.hw), prediction_journeys(pred)), path)


def plot_sweep(rows: list[dict], path):
    """Every (quant, batch) series as its own curve; the bytes panel shows the first and says so."""
    return save(context_figure(rows), path)


def plot_compare(preds, path):
    return save(hardware_figure([p.to_dict() for p in preds], {p.hw.id: p.hw.name for p in preds}), path)


def run_pairs(run: dict) -> list[dict]:
    """Measured vs predicted decode tok/s per point of a RUN.json (``tokspeed measure``) document."""
    out = []
    for pt in run.get("points") or []:
        pred = (pt.get("predicted") or {}).get("tok_s")
        if pt.get("decode_tok_s") is None or pred is None:
            continue
        out.append({"label": f"batch {pt.get('batch', 1)}\ncontext {pt.get('context', 0):,}",
                    "predicted": pred, "measured": pt["decode_tok_s"]})
    return out


def plot_run(run: dict, path):
    """``tokspeed measure --plot``: measured beside predicted decode tok/s, one pair per point."""
    pairs = run_pairs(run)
    if not pairs:
        raise UserError("nothing to draw: the run has no point with both a measured and a predicted decode speed")
    return save(measured_figure(pairs, "decode tok/s"), path)
