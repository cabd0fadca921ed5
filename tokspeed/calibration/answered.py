"""Which calibration rows tokspeed can answer, and why the others cannot: grouped by what is missing.

A row is *answered* when ``tokspeed.predict`` gives a figure for it as a user would ask (the row's model, quant,
engine, device, workload; several devices as llama.cpp's layer split). The reasons are the ones a user would meet:
an unknown model, quant or engine, a device the engine cannot run, a workload the row does not state. The fit's own
exclusions (flags such as PARTIAL_CPU_OFFLOAD, duplicates) are listed apart: they are rows not meant to be scored.
"""

from __future__ import annotations

from collections import defaultdict

from ..scale.parallel import row_split_prefill
from ..stats import band_error_pct, percentile
from .evaluate import error_pct, metric_tok_s, predicted, predicted_tok_s, stated_band_pct
from .rows import ANSWERED_NOT_FITTED

# a row's ``skip`` text -> the group it falls in (what would have to be added to answer it)
SKIP_GROUPS = (("model not in catalog", "model"), ("quant ", "quant"), ("engine ", "engine"),
               ("no FP16 peak", "device"), ("prompt length unstated", "workload"))
ROW_SPLIT_DETAIL = "llama.cpp row-split prefill not modelled (docs/scale.md)"
NOT_SCORED = ("DUPLICATE_OF", "PARTIAL_CPU_OFFLOAD", "HOST_CONTENTION", "unknown flag", "metric ")


def why_unanswered(row) -> tuple[str, str] | None:
    """(group, detail) of why ``row`` gets no prediction, None where it is answered. Groups: model, quant, engine,
    device, workload (what the row lacks), parallel (a multi-device setup tokspeed does not model), excluded (flags that keep a row out of scoring), error (predict refused)."""
    skip = "" if row.skip.startswith(ANSWERED_NOT_FITTED) else row.skip
    if skip:
        if skip.startswith(NOT_SCORED):
            return "excluded", skip
        for prefix, group in SKIP_GROUPS:
            if skip.startswith(prefix):
                return group, _detail(group, row, skip)
        return "other", skip

    if row_split_prefill(row.engine, row.parallel, row.n_devices, row.metric):
        return "parallel", ROW_SPLIT_DETAIL    # predict says so in its warnings (``ROW_SPLIT_PREFILL``)

    try:
        tok_s = predicted_tok_s(row)
    except Exception as exc:          # noqa: BLE001  -- the message is the report
        return "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    if not tok_s or tok_s != tok_s:
        return "error", "no figure for the metric"
    return None


def _detail(group: str, row, skip: str) -> str:
    if group == "model":
        return row.model
    if group == "device":
        return row.hw.name
    return skip


def unanswered(rows) -> dict[str, dict[str, list[str]]]:
    """{group: {detail: [row ids]}} for every row not answered."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        why = why_unanswered(row)
        if why:
            out[why[0]][why[1]].append(row.id)
    return {g: dict(d) for g, d in out.items()}


def report(rows) -> str:
    """Plain-text report: answered share, then each group with its details and row counts."""
    groups = unanswered(rows)
    n_out = sum(len(ids) for d in groups.values() for ids in d.values())
    excluded = sum(len(ids) for ids in groups.get("excluded", {}).values())
    lines = [f"{len(rows)} rows; answered {len(rows) - n_out} ({100 * (len(rows) - n_out) / max(len(rows), 1):.0f} %);"
             f" not answered {n_out - excluded}; excluded by flags {excluded}"]
    for group in sorted(groups, key=lambda g: -sum(map(len, groups[g].values()))):
        d = groups[group]
        lines.append(f"  {group}: {sum(map(len, d.values()))} rows")
        for detail, ids in sorted(d.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"    {len(ids):4d}  {detail}  ({ids[0]}{' …' if len(ids) > 1 else ''})")
    return "\n".join(lines)


def user_view(rows) -> list[dict]:
    """Every answered row as a user gets it (the shipped fit, the band its answer states): backend, vendor, metric,
    signed % error, the stated band in %, whether the measurement lies inside it."""
    out = []
    for row in rows:
        if why_unanswered(row):
            continue
        p = predicted(row)
        err = error_pct(metric_tok_s(p, row), row.tok_s)
        band = stated_band_pct(p, row)     # as the answer states it: the fitted band and its distance terms
        part = p.prefill if row.metric == "prefill" else p.decode
        out.append({"id": row.id, "engine": row.engine, "vendor": row.hw.vendor, "kind": row.kind, "error": err,
                    "band": band, "inside": band_error_pct(err) <= band,
                    "width": part.tok_s_high / part.tok_s_low if part.tok_s_low else float("nan")})
    return out


def user_table(view) -> str:
    """Markdown: per backend and metric, answered rows, median / p90 |error| %, signed median, band coverage, the
    median stated band and the median width of the stated range (its high end over its low end)."""
    lines = ["| backend | metric | answered | median / p90 abs error % | signed median % | inside the stated band | "
             "median band | median width (high / low) |", "|---|---|---|---|---|---|---|---|"]
    keys = sorted({(v["engine"], v["kind"]) for v in view}) + [("all", "decode"), ("all", "prefill")]
    for eng, kind in keys:
        vs = [v for v in view if v["kind"] == kind and eng in ("all", v["engine"])]
        if not vs:
            continue
        a = [abs(v["error"]) for v in vs]
        inside = 100 * sum(v["inside"] for v in vs) / len(vs)
        lines.append(f"| {eng} | {kind} | {len(vs)} | {percentile(a, 50):.0f} / {percentile(a, 90):.0f} | "
                     f"{percentile([v['error'] for v in vs], 50):+.0f} | {inside:.0f} % | "
                     f"±{percentile([v['band'] for v in vs], 50):.0f} % | "
                     f"×{percentile([v['width'] for v in vs], 50):.2f} |")
    return "\n".join(lines)
