"""The rich table `tokspeed predict` prints, and the "does not fit" headline with the ways to run it."""

from __future__ import annotations

from ..advise.alternatives import ways_to_run
from ..units import fmt_bytes, fmt_rate, fmt_seconds
from .console import make_console
from .text import FitTable, markup_safe, one_line, styled, ttft_how


def setup_title(pred) -> str:
    """``model · quant · device · engine · batch · tokens`` (plain text, cleaned)."""
    assumed = " (assumed)" if getattr(pred, "quant_assumed", None) else ""
    return one_line(f"{pred.model} · {pred.quant}{assumed} · {pred.hw.name} · {pred.engine} · batch {pred.batch} · "
                    f"context {pred.context:,} + prompt {pred.prompt:,} + gen {pred.gen:,}")


def fit_headline(pred) -> str:
    """'' when it fits; else what does not fit, by how much, and that its speeds are hypothetical."""
    m = pred.memory
    if m.fits:
        return ""
    return (f"DOES NOT FIT: needs {fmt_bytes(m.total_bytes)} of {fmt_bytes(m.capacity_bytes)}; "
            "the speeds shown are hypothetical (as if it fitted)")


def context_cell(m, pred=None) -> tuple[str, str]:
    """(value, how) of the largest context / batch row, saying why when nothing fits and when the model's
    trained window (not memory) sets the largest context."""
    if m.max_context <= 0:
        fixed = m.weights_bytes + m.activations_bytes + m.overhead_bytes
        return "none", (f"weights + buffers ({fmt_bytes(fixed)}) already exceed {fmt_bytes(m.capacity_bytes)}: "
                        "no context fits")
    spec = getattr(pred, "spec", None)
    window = getattr(spec, "max_context", 0) or 0
    tokens = pred.context + pred.prompt + pred.gen if pred is not None else 0
    first = "tokens at this batch" + (" (the trained window)" if window and m.max_context == window else "")
    second = "sequences at this context" if m.max_batch else f"no sequence of {tokens:,} tokens fits"
    batch = f"{m.max_batch:,}" if m.max_batch else "none"
    return f"{m.max_context:,} / {batch}", f"{first} / {second}"


def render_ways(console, pred, model, ways=None, **predict_options) -> list[dict]:
    """Print the ways to run a setup that does not fit (computing them for ``model`` as the user named it,
    with the same ``predict_options``, unless given); returns them."""
    if pred.memory.fits:
        return []
    if ways is None:
        ways = ways_to_run(model, pred.hw, **predict_options)
    if not ways:
        console.print("[bold red]no way tried makes it fit[/] (offload, more devices, a smaller format, a shorter "
                      "context): choose a device with more memory")
        return ways
    console.print("[bold]ways to run it[/] (each predicted):")
    for w in ways:
        console.print(f"  · [bold]{w['kind']}[/]: {markup_safe(w['description'])}")
    return ways


def bound_how(pred) -> str:
    """The decode bound's working, from the numbers that give it: ``BW GB/s ÷ bytes per token`` (``÷ (B × bytes)
    per step`` at batch B), where BW is the device's bandwidth when that reproduces the bound (one device,
    memory-bound), else the bandwidth the bound implies (bytes per step x bound tok/s: offload, several devices,
    compute-bound operators) with what makes it differ. ``BW / (B x bytes)`` equals the bound to rounding."""
    d, b, bw = pred.decode, pred.batch, pred.hw.bandwidth_gbps
    implied = d.bytes_per_token * b * d.bound_tok_s / 1e9
    per = f"{fmt_bytes(d.bytes_per_token)} per token" if b == 1 else f"({b} × {fmt_bytes(d.bytes_per_token)}) per step"
    tail = f", averaged over {pred.gen} tokens"
    if abs(implied - bw) <= 0.005 * bw:
        return f"{bw:g} GB/s ÷ {per}{tail}"
    off, par = pred.offload, pred.parallel or {}
    n = par.get("n_devices", 1)
    if off:
        why = f"layers in RAM at {off['cpu_bandwidth_gbps']:g} GB/s, the rest at {bw:g} GB/s"
    elif n > 1:
        why = f"{n} × {bw:g} GB/s, less link time"
    else:
        why = f"{bw:g} GB/s, less the compute-bound operators' time"
    shown = f"{implied:,.0f}" if implied >= 100 else f"{implied:.3g}"
    return f"{shown} GB/s effective ({why}) ÷ {per}{tail}"


SHARE_NAMES = {"compute": "compute", "memory": "memory", "overhead": "launches + per-step", "link": "links"}


def bound_label(d) -> str:
    """``memory-bound``, with the first step's shares when more than one part matters (each >= 10 %): e.g.
    ``memory-bound (memory 70%, launches + per-step 24%)``; ``overhead-bound`` when launches and per-step
    costs are the largest part."""
    shares = {k: v for k, v in (getattr(d, "time_shares", None) or {}).items() if v >= 0.10}
    label = f"{d.bound}-bound"
    if len(shares) < 2:
        return label
    parts = ", ".join(f"{SHARE_NAMES[k]} {v:.0%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]))
    return f"{label} ({parts})"


def render_prediction(pred, console=None):
    console = console or make_console()
    m, d, p = pred.memory, pred.decode, pred.prefill
    hyp = not m.fits
    tag = " (hypothetical)" if hyp else ""
    t = FitTable(title=setup_title(pred))
    t.column("quantity", min_width=14).column("value", numeric=True).column("how", drop=1, min_width=16, style="dim")
    fit = styled("fits", "green") if m.fits else styled("DOES NOT FIT", "bold red")
    t.row("memory", f"{fmt_bytes(m.total_bytes)} / {fmt_bytes(m.capacity_bytes)}",
          f"weights {fmt_bytes(m.weights_bytes)} + KV {fmt_bytes(m.kv_bytes)} + activations "
          f"{fmt_bytes(m.activations_bytes)} + runtime {fmt_bytes(m.overhead_bytes)}"
          + (f"; token embedding {fmt_bytes(m.host_bytes)} in host RAM (the engine keeps its input layer there)"
             if getattr(m, "host_bytes", 0) else ""))
    t.row("fits", fit, f"capacity is the device's usable memory ({usable_note(pred, m)})")
    t.row("largest context / batch", *context_cell(m, pred))
    t.row("bytes read per token", fmt_bytes(d.bytes_per_token),
          f"weights {fmt_bytes(d.weight_bytes_per_token)} + KV {fmt_bytes(d.kv_bytes_per_token)} (+ activations)")
    t.row(f"decode bound (ideal){tag}", f"{fmt_rate(d.bound_tok_s)} tok/s", bound_how(pred))
    t.row(f"decode expected ({pred.engine}){tag}", styled(f"{fmt_rate(d.tok_s)} tok/s", "dim" if hyp else "bold"),
          f"{d.ms_per_token:.2f} ms/token, {bound_label(d)}, range {fmt_rate(d.tok_s_low)}–{fmt_rate(d.tok_s_high)}")
    if pred.batch > 1:
        t.row(f"decode aggregate{tag}", f"{fmt_rate(d.aggregate_tok_s)} tok/s", f"{pred.batch} sequences")
    if pred.prompt and p.tok_s is None:
        t.row("prefill", "unknown", p.bound)
    elif pred.prompt:
        t.row(f"prefill{tag}", f"{fmt_rate(p.tok_s)} tok/s",
              f"{fmt_seconds(p.seconds)} for {pred.prompt} tokens, {p.bound}-bound, bound {fmt_rate(p.bound_tok_s)} tok/s")
    if pred.ttft_s is not None:
        t.row(f"time to first token{tag}", fmt_seconds(pred.ttft_s), ttft_how(pred))
    elif pred.prompt:
        t.row("time to first token", "unknown", "prefill time unknown (no FLOP/s figure for this device)")
    if hyp:
        console.print(f"[bold red]{markup_safe(fit_headline(pred))}[/]")
    t.print(console)
    if getattr(pred, "quant_assumed", None):
        console.print(f"[dim]weight format assumed (no --quant): {markup_safe(pred.quant_assumed)}[/]")
    console.print(f"[dim]engine model: {markup_safe(pred.engine_source)}[/]")


def usable_note(pred, m) -> str:
    """Why the capacity is what it is: the device's own note (a Mac: macOS's GPU wired limit), or a label's
    GB read as GiB where the device is not at hand (several devices, an offload split)."""
    hw = getattr(pred, "hw", None)
    if hw is not None and abs(hw.usable_bytes - m.capacity_bytes) < 1:
        return hw.usable_note()
    return f"{m.capacity_bytes / 2**30:,.4g} GiB: a label's \"GB\" of device memory is GiB"
