"""The rich table `tokspeed predict` prints."""

from __future__ import annotations

from ..units import fmt_bytes, fmt_rate, fmt_seconds


def render_prediction(pred, console=None):
    from .console import make_console
    from rich.table import Table

    console = console or make_console()
    m, d, p = pred.memory, pred.decode, pred.prefill
    title = (f"{pred.model} · {pred.quant} · {pred.hw.name} · {pred.engine} · batch {pred.batch} · "
             f"context {pred.context} + prompt {pred.prompt} + gen {pred.gen}")
    t = Table(title=title, show_header=True, header_style="bold")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_column("how", style="dim")
    fit = "[green]fits[/]" if m.fits else "[red]does not fit[/]"
    t.add_row("memory", f"{fmt_bytes(m.total_bytes)} / {fmt_bytes(m.capacity_bytes)} {fit}",
              f"weights {fmt_bytes(m.weights_bytes)} + KV {fmt_bytes(m.kv_bytes)} + activations "
              f"{fmt_bytes(m.activations_bytes)} + runtime {fmt_bytes(m.overhead_bytes)}")
    t.add_row("largest context / batch", f"{m.max_context:,} tok / {m.max_batch:,}",
              "at this batch / at this context")
    t.add_row("bytes read per token", fmt_bytes(d.bytes_per_token),
              f"weights {fmt_bytes(d.weight_bytes_per_token)} + KV {fmt_bytes(d.kv_bytes_per_token)} (+ activations)")
    t.add_row("decode bound (ideal)", f"{fmt_rate(d.bound_tok_s)} tok/s",
              f"{pred.hw.bandwidth_gbps:g} GB/s ÷ bytes per token, averaged over {pred.gen} tokens")
    t.add_row(f"decode expected ({pred.engine})", f"[bold]{fmt_rate(d.tok_s)} tok/s[/]",
              f"{d.ms_per_token:.2f} ms/token, {d.bound}-bound, range {fmt_rate(d.tok_s_low)}–{fmt_rate(d.tok_s_high)}")
    if pred.batch > 1:
        t.add_row("decode aggregate", f"{fmt_rate(d.aggregate_tok_s)} tok/s", f"{pred.batch} sequences")
    if pred.prompt and p.tok_s is None:
        t.add_row("prefill", "unknown", p.bound)
    elif pred.prompt:
        t.add_row("prefill", f"{fmt_rate(p.tok_s)} tok/s",
                  f"{fmt_seconds(p.seconds)} for {pred.prompt} tokens, {p.bound}-bound, bound {fmt_rate(p.bound_tok_s)} tok/s")
    if pred.ttft_s is not None:
        t.add_row("time to first token", fmt_seconds(pred.ttft_s), "prefill + one sampling step")
    console.print(t)
    console.print(f"[dim]engine model: {pred.engine_source}[/]")
