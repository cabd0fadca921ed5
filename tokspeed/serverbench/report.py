"""The human view of a summary: one rich table row per phase, errors, and the prediction if any.
Every string from the run (model, URL, phase labels, messages) is markup-escaped (``guard.escape.markup``):
a model called ``[/bold]`` is printed as typed."""

from __future__ import annotations

from rich.table import Table

from ..guard.console import safe_console
from ..guard.escape import markup as esc


def _f(v, fmt=None, scale=1.0):
    """A number in few characters: 3 significant digits unless a format is given."""
    if v is None:
        return "-"
    v = v * scale
    if fmt:
        return fmt.format(v)
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def print_summary(summary: dict, console=None) -> None:

    console = console or safe_console()
    run = summary.get("run", {})
    title = esc(f"{run.get('model', '?')} @ {run.get('url', '?')} ({run.get('api', '?')})")
    if summary.get("partial"):
        title += "  [partial: interrupted]"
    t = Table(title=title, caption="TTFT/TPOT/ITL in ms, e2e in s; tok/s/user = decode speed one request sees, all = aggregate")
    # times in ms except e2e (s); tok/s per user = decode speed one request sees; total = aggregate
    for col in ("phase", "ok", "TTFT\np50", "TTFT\np99", "TPOT\np50", "ITL\np99", "e2e\np50",
                "tok/s\nuser", "tok/s\nall", "good\nreq/s", "tokens\nfrom"):
        t.add_column(col, justify="left" if col in ("phase", "tokens\nfrom") else "right")
    for ph in summary.get("phases", []):
        st = ph.get("stats", {})
        g = lambda m, q: (st.get(m) or {}).get(q)  # noqa: E731
        t.add_row(esc(ph.get("phase")), f"{ph['ok']}/{ph['requests']}", _f(g("ttft_s", "p50"), scale=1e3),
                  _f(g("ttft_s", "p99"), scale=1e3), _f(g("tpot_s", "p50"), scale=1e3),
                  _f(g("itl_s", "p99"), scale=1e3), _f(g("e2e_s", "p50")),
                  _f(ph.get("per_user_decode_tok_s")), _f(ph.get("output_tok_s")), _f(ph.get("goodput_rps")),
                  esc(",".join(map(str, ph.get("output_tokens_source") or [])) or "-"))
    console.print(t)
    sat = summary.get("saturation")
    if sat:
        load = f"concurrency {sat['concurrency']}" if "concurrency" in sat else f"{sat.get('rate_rps'):g} requests/s"
        console.print(f"saturation: {load}, {_f(sat.get('output_tok_s'))} output tok/s (limit: {sat.get('limit')})",
                      markup=False)
    if summary.get("errors"):
        console.print("failed requests by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["errors"].items())),
                      markup=False)
    if summary.get("cancelled"):
        console.print(f"cancelled by Ctrl-C: {summary['cancelled']}")
    pred = summary.get("prediction")
    if pred and pred.get("phases"):
        pt = Table(title=f"measured vs tokspeed prediction on {esc(pred['hardware'])}")
        for col in ("phase", "measured tok/s/user", "predicted", "bound", "measured/predicted", "MBU"):
            pt.add_column(col, justify="right")
        for r in pred["phases"]:
            pt.add_row(esc(r["phase"]), _f(r["measured_tok_s"]), _f(r["predicted_tok_s"]), _f(r["bound_tok_s"]),
                       _f(r["measured_over_predicted"], "{:.2f}"), _f(r["mbu"], "{:.0%}"))
        console.print(pt)
        for note in sorted({r["note"] for r in pred["phases"] if r.get("note")}):
            console.print(f"[yellow]warning:[/] {esc(note)}")
    elif summary.get("prediction_error"):
        console.print(f"no prediction: {summary['prediction_error']}", markup=False)
