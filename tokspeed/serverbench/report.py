"""The human view of a summary: one rich table row per phase, errors, and the prediction if any."""

from __future__ import annotations


def _f(v, fmt="{:.1f}", scale=1.0):
    return "-" if v is None else fmt.format(v * scale)


def print_summary(summary: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    run = summary.get("run", {})
    title = f"{run.get('model', '?')} @ {run.get('url', '?')} ({run.get('api', '?')})"
    if summary.get("partial"):
        title += "  [partial: interrupted]"
    t = Table(title=title, caption="times in ms unless marked")
    # times in ms except e2e (s); tok/s per user = decode speed one request sees; total = aggregate
    for col in ("phase", "ok", "TTFT p50", "TTFT p99", "TPOT p50", "ITL p99", "e2e p50 s",
                "tok/s user", "tok/s total", "counted by"):
        t.add_column(col, justify="left" if col in ("phase", "counted by") else "right")
    for ph in summary.get("phases", []):
        st = ph.get("stats", {})
        g = lambda m, q: (st.get(m) or {}).get(q)  # noqa: E731
        t.add_row(str(ph.get("phase")), f"{ph['ok']}/{ph['requests']}", _f(g("ttft_s", "p50"), scale=1e3),
                  _f(g("ttft_s", "p99"), scale=1e3), _f(g("tpot_s", "p50"), "{:.2f}", 1e3),
                  _f(g("itl_s", "p99"), "{:.2f}", 1e3), _f(g("e2e_s", "p50"), "{:.2f}"),
                  _f(ph.get("per_user_decode_tok_s")), _f(ph.get("output_tok_s")),
                  ",".join(ph.get("output_tokens_source") or []) or "-")
    console.print(t)
    if summary.get("errors"):
        console.print("failed requests by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["errors"].items())))
    if summary.get("cancelled"):
        console.print(f"cancelled by Ctrl-C: {summary['cancelled']}")
    pred = summary.get("prediction")
    if pred and pred.get("phases"):
        pt = Table(title=f"measured vs tokspeed prediction on {pred['hardware']}")
        for col in ("phase", "measured tok/s/user", "predicted", "bound", "measured/predicted", "MBU"):
            pt.add_column(col, justify="right")
        for r in pred["phases"]:
            pt.add_row(str(r["phase"]), _f(r["measured_tok_s"]), _f(r["predicted_tok_s"]), _f(r["bound_tok_s"]),
                       _f(r["measured_over_predicted"], "{:.2f}"), _f(r["mbu"], "{:.0%}"))
        console.print(pt)
    elif summary.get("prediction_error"):
        console.print(f"no prediction: {summary['prediction_error']}")
