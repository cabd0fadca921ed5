"""Prompt series that measure something other than a prompt: rows equal in all but their prompt length whose tok/s
rises from every length to the next, up to prompts of at least ``-b`` tokens.

A llama.cpp prompt pass gets no cheaper per token as the prompt grows: on one device each ``-ub`` micro-batch costs
what the one before it did plus the keys it attends to; over devices that pipeline (``-sm layer`` on CUDA) the gain
stops once a ``-b`` batch fills the pipeline, since llama.cpp hands the batches over one after another
(``llama_decode`` per ``n_batch`` tokens). So a series still rising between two prompts of at least ``n_batch``
tokens, at every step before as well, times a cost per run its rows do not state (a load, a warm-up, a host copy)
amortised over more tokens -- the rows of XiongjieDai's 2024 tables for Llama 3 8B F16 on the A100 SXM4 (604 ->
1,323 tok/s from 512 to 8,192 tokens, a tenth of the A100 PCIe's 7,741 in the same table) and on the L40S, its
70B Q4_K_M on the A40, and their multi-GPU twins. Such rows are not scored (``SKIP``); every other series of both
CSVs falls or levels off.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

SKIP = "prompt series rises with its length"
MIN_LENGTHS = 3


def series_key(row) -> tuple:
    """What a row's series shares: everything but the prompt length and the measured rate."""
    return (row.source, row.hw.name, row.n_devices, row.parallel, row.model, row.quant, row.engine, row.context,
            row.batch, row.flags, row.ubatch, row.n_batch, row.date, row.build, row.driver)


def rising_series(rows) -> set[str]:
    """Ids of the prefill rows in a series of at least ``MIN_LENGTHS`` distinct prompt lengths (one row each) whose
    tok/s rises at every step and between its two longest prompts, both at least the series' ``n_batch``."""
    groups = defaultdict(list)
    for r in rows:
        if r.metric == "prefill" and r.prompt > 0:
            groups[series_key(r)].append(r)
    out = set()
    for series in groups.values():
        series.sort(key=lambda r: r.prompt)
        lengths = [r.prompt for r in series]
        if len(set(lengths)) != len(lengths) or len(lengths) < MIN_LENGTHS:
            continue
        if lengths[-2] < series[0].n_batch:
            continue
        if all(b.tok_s > a.tok_s for a, b in zip(series, series[1:])):
            out.update(r.id for r in series)
    return out


def mark_rising_series(rows: list) -> list:
    """``rows`` with the scorable rows of a rising series (``rising_series``) given ``skip`` = ``SKIP``."""
    rising = rising_series(rows)
    if not rising:
        return rows
    return [replace(r, skip=SKIP) if r.id in rising and not r.skip else r for r in rows]
