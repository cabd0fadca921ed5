"""``bench-server --compare DIR DIR ...``: several runs overlaid in one self-contained page
(output tok/s, TTFT p90, TPOT p90 and goodput vs load, one line per run) and one table on stdout."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UserError
from ..guard.escape import html as escape, line
from ..guard.outputs import write_file
from ..userfile import path_kind, read_json
from .report_html import CSS, load_axis
from .svg import line_chart

MAX_RUNS = 12


def read_summary(d: str) -> dict:
    p = Path(d)
    p = p / "summary.json" if path_kind(p, "run") == "dir" else p

    if path_kind(p, "summary") is None:
        raise UserError(f"no summary.json at {d}", "give directories written by bench-server -o DIR")
    _, obj = read_json(p, "summary")       # size cap, finite numbers only, nesting capped: one line each
    if not isinstance(obj, dict) or not isinstance(obj.get("phases"), list) \
            or not all(isinstance(ph, dict) for ph in obj["phases"]) or not isinstance(obj.get("run", {}), dict):
        raise UserError(f"{p} is not a bench-server summary")
    return obj


def compare_runs(dirs: list[str], output: str | None = None) -> Path:
    if len(dirs) > MAX_RUNS:
        raise UserError(f"at most {MAX_RUNS} runs can be compared, got {len(dirs)}", field="compare")
    runs = [(str(d), read_summary(d)) for d in dirs]
    kinds = {load_axis(s)[0] for _, s in runs}
    if len(kinds) > 1:
        raise UserError("these runs mix concurrency and rate phases", "compare runs of the same load kind")
    kind = kinds.pop()
    xlabel = "requests in flight (concurrency)" if kind == "concurrency" else "arrival rate (requests/s)"

    def series(metric, scale=1.0, q=None):
        out = []
        for name, s in runs:
            pts = []
            for p in load_axis(s)[1]:
                v = ((p.get("stats") or {}).get(metric) or {}).get(q) if q else p.get(metric)
                pts.append((p.get("load"), None if v is None else v * scale))
            out.append({"name": Path(name).name or name, "points": pts})
        return out

    logx = kind == "concurrency"
    charts = [line_chart("output throughput vs load", series("output_tok_s"), xlabel, "output tokens/s", logx=logx),
              line_chart("TTFT p90 vs load", series("ttft_s", 1e3, "p90"), xlabel, "TTFT p90 (ms)", logx=logx),
              line_chart("TPOT p90 vs load", series("tpot_s", 1e3, "p90"), xlabel, "TPOT p90 (ms)", logx=logx),
              line_chart("goodput vs load", series("goodput_rps"), xlabel, "requests/s", logx=logx)]
    rows = "".join(f"<tr><td>{escape(n)}</td><td>{escape(str(s['run'].get('model')))}</td>"
                   f"<td>{escape(str(s['run'].get('url')))}</td><td>{escape(str((s.get('server') or {}).get('engine', '–')))}</td>"
                   f"<td>{escape(str(_sat(s)))}</td></tr>" for n, s in runs)
    html = ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>bench-server comparison</title>"
            f"<style>{CSS}</style></head><body><h1>bench-server: {len(runs)} runs compared</h1>"
            "<table><tr><th>run</th><th>model</th><th>URL</th><th>engine</th><th>saturation</th></tr>"
            f"{rows}</table><div class='grid'>{''.join(charts)}</div></body></html>\n")
    out = Path(output) if output else Path("bench-compare.html")
    if out.is_dir():
        out = out / "compare.html"

    write_file(out, html, "comparison")
    for name, s in runs:
        best = max((p.get("output_tok_s") or 0 for p in s["phases"]), default=0)
        sys.stdout.write(line(f"{name}: best {best:,.0f} output tok/s; saturation {_sat(s)}") + "\n")
    return out


def _sat(s: dict) -> str:
    sat = s.get("saturation")
    if not sat:
        return "-"
    load = f"c={sat['concurrency']}" if "concurrency" in sat else f"rate={sat.get('rate_rps')}"
    return f"{load} ({sat.get('limit')})"
