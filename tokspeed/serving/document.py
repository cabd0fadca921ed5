"""The `tokspeed serve --json` document (its contract: docs/serving.md), written once for the CLI, the HTML
report's serving section and the web page's /api/serve."""

from __future__ import annotations

from ..errors import UserError
from .search import best_per_layout, search


def serve_document(setup, gpus: int, scenario: str, slo, configs: list, frontier: list) -> dict:
    """The document of configurations ``configs`` (``result.ServingConfig``, best first) and ``frontier``
    (``result.FrontierPoint``) of ``setup`` on ``gpus`` devices: the dicts of the JSON contract."""
    r0 = setup.group(1, 1)
    return {"model": r0.spec.id, "hardware": r0.hw.id, "gpus": gpus, "engine": r0.profile.name,
            "engine_version": getattr(r0.profile, "version", None) or setup.engine_version or None, "quant": r0.quant,
            "kv_dtype": r0.kv_dtype, "isl": setup.isl, "osl": setup.osl,
            # the GPU driver the engine runs under (engines/driver.py) and why it was assumed (None: named or no choice)
            "driver": getattr(r0.profile, "driver", "") or None, "driver_assumed": getattr(r0.profile, "driver_assumed", None),
            "scenario": "rate" if scenario == "trace" else scenario,
            "slo": slo.to_dict() if slo is not None and slo.any else None,
            "configs": [c.to_dict() for c in configs], "frontier": [p.to_dict() for p in frontier]}


def search_document(setup, gpus: int, slo=None, load=None, disagg: bool = True) -> dict:
    """Search every layout of ``gpus`` devices (``serving.search``): the best configuration of each layout and
    the frontier. Raises ``UserError`` when no layout holds a request."""
    rows, frontier = search(setup, gpus, load, slo, disagg=disagg)
    if not rows:
        r0 = setup.group(1, 1)
        raise UserError(f"{r0.spec.id} fits no layout of {gpus} x {r0.hw.id} with room in the KV cache for a "
                        f"request of {setup.isl + setup.osl:,} tokens", "add GPUs, shorten requests or use a smaller quant")
    return serve_document(setup, gpus, load.scenario if load else "concurrency", slo, best_per_layout(rows), frontier)


def layout_text(lay) -> str:
    """A config's layout in words: "TP1xEP8xattn-DP8", "TP4 x 2 replicas", "disagg 6xTP1 prefill + 1xTP2 decode"."""
    d = lay.get("disagg")
    if d:
        return f"disagg {d['prefill_workers']}xTP{d['prefill_tp']} prefill + {d['decode_workers']}xTP{d['decode_tp']} decode"
    parts = [f"TP{lay['tp']}"]
    if lay["pp"] > 1:
        parts.append(f"PP{lay['pp']}")
    if lay["ep"] > 1:
        parts.append(f"EP{lay['ep']}")
    if lay["dp"] > 1:
        parts.append(f"attn-DP{lay['dp']}")
    return "x".join(parts) + (f" x {lay['replicas']} replicas" if lay["replicas"] > 1 else "")
