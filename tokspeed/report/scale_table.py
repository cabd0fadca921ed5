"""Human tables for the scale sections of a prediction: devices, parallel, offload, serving, cost."""

from __future__ import annotations

from ..units import fmt_bytes, fmt_rate, fmt_seconds
from .console import make_console
from .text import FitTable, markup_safe, styled


def _table(title: str, columns, text=(), drop=()):
    """Columns are numbers unless named in ``text`` (names of devices and stages); those in ``drop`` go first
    (last named first) on a narrow terminal."""
    t = FitTable(title=title)
    for c in columns:
        t.column(c, numeric=c not in text, drop=drop.index(c) + 1 if c in drop else 0, min_width=12)
    return t


def _no():
    return styled("no", "red")


def render_scale(pred, console=None):
    console = console or make_console()
    x = pred.extra
    devs = x.get("devices", {}).get("per_device", [])
    if len(devs) > 1 or pred.layout is not None:
        t = _table(f"memory per device ({x['devices']['count']} GPU)",
                   ("device", "hardware", "x", "weights", "KV", "activations + runtime", "total / capacity", "fits"),
                   text=("device", "hardware"), drop=("weights", "KV", "activations + runtime", "x"))
        for d in devs:
            t.row(d["name"], d["hardware"], str(d["count"]), fmt_bytes(d["weights_bytes"]), fmt_bytes(d["kv_bytes"]),
                      fmt_bytes(d["activations_bytes"] + d["overhead_bytes"]),
                      f"{fmt_bytes(d['total_bytes'])} / {fmt_bytes(d['capacity_bytes'])}",
                      "yes" if d["fits"] else _no())
        t.print(console)
    par = x.get("parallel", {})
    if par.get("n_devices", 1) > 1:
        line = f"parallel: {par['style']} (tp={par['tp']}, pp={par['pp']})"
        if par.get("row_split"):
            line += (f"; llama.cpp row split over {par['tp_link']['name']}: {par['syncs_per_token']} matmul "
                     f"gathers per token")
        elif "tp_link" in par and par["tp"] > 1:
            line += (f"; TP over {par['tp_link']['name']} ({par['tp_link']['per_direction_gbps']:g} GB/s per direction): "
                     f"{par['allreduces_per_token']} all-reduces per token, "
                     f"{fmt_bytes(par['allreduce_bytes_per_token_per_device'])} sent per device per token")
            if "allreduce_algorithm" in par:
                line += f" (the engine's {par['allreduce_algorithm']} all-reduce, {par['allreduce_us']:.1f} µs each)"
        if "pipeline_link" in par:
            via = "host memory (device -> host -> device)" if par.get("handoff_via_host") else par['pipeline_link']['name']
            line += f"; stage hand-off {fmt_bytes(par['handoff_bytes_per_token'])}/token over {via}"
        console.print(markup_safe(line))
    off = x.get("offload")
    if off:
        t = _table(f"offload ({off['mode']}): {off['gpu_layers']} of {off['n_layers_with_output']} layers on the GPU, "
                   f"{fmt_bytes(off['weights_in_ram_bytes'])} of weights in RAM",
                   ("stage", "device", "layers", "ms per token", "of which link"), text=("stage", "device"), drop=("of which link",))
        for s in off["decode_seconds_by_stage"]:
            t.row(s["name"], s["hardware"], layer_span(s["layers"], s.get("output", False)), f"{s['seconds'] * 1e3:.2f}",
                      f"{s['link_s'] * 1e3:.2f}")
        t.print(console)
        console.print(f"VRAM vs host link: {off['vram_vs_host_link']:.1f}x; VRAM vs CPU RAM ({markup_safe(off['cpu'])}): "
                      f"{off['vram_vs_cpu_ram']:.1f}x")
    sv = x.get("serving")
    if sv:
        t = _table(f"batching (decode at depth {sv['decode_depth']:,}): ridge batch {sv['ridge_batch']}, "
                   f"largest batch that fits {sv['max_batch']:,}", ("batch", "ms/step", "per-user tok/s", "aggregate tok/s", "fits"))
        for r in sv["batches"]:
            t.row(str(r["batch"]), f"{r['step_ms']:.2f}", fmt_rate(r["per_user_tok_s"]), fmt_rate(r["aggregate_tok_s"]),
                      "yes" if r["fits"] else _no())
        t.print(console)
        if "users" in sv:
            u = sv["users"]
            console.print(f"{u['users']} users: {fmt_rate(u['per_user_tok_s'])} tok/s each, "
                          f"{fmt_rate(u['aggregate_tok_s'])} tok/s in all")
        cb = sv.get("continuous")
        if cb:
            if cb["stable"] is None:
                console.print(f"continuous batching: {markup_safe(cb['reason'])}")
            elif cb["stable"]:
                console.print(f"continuous batching at {cb['rate_rps']:g} req/s: ~{cb['running_sequences']:.1f} running, "
                              f"TTFT {fmt_seconds(cb['ttft_s'])}, TPOT {fmt_seconds(cb['tpot_s'])}, "
                              f"prefill {cb['prefill_share']:.0%} of the time; max {cb['max_rate_rps']:.2f} req/s")
            else:
                console.print(f"[red]{cb['rate_rps']:g} req/s is beyond this setup[/]: {markup_safe(cb['reason'])} "
                              f"(max {cb['max_rate_rps']:.2f} req/s)")
    c = x.get("cost", {})
    parts = []
    if c.get("usd_per_million_tokens") is not None:
        parts.append(f"${c['usd_per_million_tokens']:.2f} per 1M tokens at ${c['price_per_hour']:g}/h")
    if c.get("joules_per_token") is not None:
        parts.append(f"{c['joules_per_token']:.2f} J/token at {c['power_w']:g} W TDP")
    if parts:
        hyp = "" if pred.memory.fits else " (hypothetical: it does not fit)"
        console.print(f"cost at {fmt_rate(c['at_aggregate_tok_s'])} tok/s{hyp}: " + "; ".join(parts))


def layer_span(layers, output: bool = False) -> str:
    """A stage's layers as people count them: the half-open [a, b) as ``a-(b-1)`` (``0-35``, ``36-79``), one layer
    as its number, and ``output`` for the final norm + LM head a stage also runs (``76-79 + output``)."""
    a, b = layers
    parts = [f"{a}-{b - 1}" if b - 1 > a else str(a)] if b > a else []
    if output:
        parts.append("output")
    return " + ".join(parts) or "none"
