"""The signed error of each backend's answers per architecture family: in sample, under the priors alone, and held
out (by source; forward in time), from the fit's results (scripts/fit_calibration.py writes it into
docs/calibration.md).

A band is the spread of held-out errors; it must not be wide to cover a bias. This table says where a bias is: a
family whose held-out answers are one-sided (all too fast or all too slow) is a mechanism the model lacks or a prior
that is off, not noise. The signed median is of predicted / measured - 1 (%); a family's rows held out by source
are answered by the refit on the other sources' rows, pooled toward the priors (none of its own left: the priors).
"""

from __future__ import annotations

import math

import numpy as np

from ..engines.pooling import arch_family

MIN_FAMILY_ROWS = 4        # fewer rows of a backend x family x metric: not listed (a median of three says little)


def _median(xs) -> str:
    xs = [x for x in xs if not math.isnan(x)]
    return f"{float(np.median(xs)):+.0f}" if xs else "—"


def family_bias_table(results, k: float) -> str:
    """Markdown: per backend, architecture family and metric with at least MIN_FAMILY_ROWS scored rows, the rows,
    their sources, and the signed median error in sample, under the priors alone, held out by source and forward in
    time (the rows that scheme holds out; "—" where it holds out none)."""
    lines = ["| backend | family | metric | rows | sources | in sample | priors alone | held out by source | "
             "forward in time |", "|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        groups: dict = {}
        for i, r in enumerate(res["rows"]):
            groups.setdefault((arch_family(r.hw), r.kind), []).append(i)
        for (fam, kind), idx in sorted(groups.items()):
            if len(idx) < MIN_FAMILY_ROWS:
                continue
            rows = res["rows"]
            col = [_median(res["insample"][i] for i in idx), _median(res["prior_alone"][i] for i in idx)]
            col += [_median(res["pooled"][s][k][i] for i in idx) for s in ("source", "time")]
            lines.append(f"| {res['engine']} | {fam} | {kind} | {len(idx)} | "
                         f"{len({rows[i].source for i in idx})} | " + " | ".join(col) + " |")
    return "\n".join(lines)
