"""Vectorised ``predict`` over many calibration rows for many trial engine profiles (the fit).

The operator ledger of every pass a row needs (decode steps as the KV cache grows, prefill
micro-batches) is built once with ``tokspeed.ledger.forward_ops`` and ``tokspeed.predict.decode_steps``
and flattened into numpy arrays (a layer split the fit takes, ``split_rows``: its one-device passes plus its
hand-offs); evaluating a profile then costs a few array operations instead of
thousands of ``op_time`` calls. The FLOP/s of every operator comes from the one function ``op_time`` takes it
from (``tokspeed.engines.rates.compute_rate``), called once per kind of operator (ledger unit, attention or not,
tokens routed per expert) of each distinct pass of a row; the stream rates from ``rates_stream.stream_bytes_s``,
once per row; numpy does only the soft minimum of each Rate with its bounds, the roofline's max and the sums
(``tests/test_calibration_fit.py`` holds the two equal on a sample of rows). Not mirrored: what ``compat.runnable`` adds for a device -- a SoC's CPU-cluster view
and a CPU engine's per-node barrier (``EngineProfile.with_barrier``) --, as no scored row runs llama.cpp-cpu.
Needs numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engines.compat import mixer_graph, unmodelled_kernels
from ..engines.fa_tiles import extra_kv_bytes
from ..engines.kernel_cost import driver_fixed_s, driver_launch_s
from ..engines.linear_mixer import graph_state_bytes
from ..engines.moe_dispatch import expert_loop_kernels
from ..engines.profile import prior_profile
from ..engines.rates import BOARD_POWER, CAP_SHARPNESS, INT8_KERNELS, MMQ_BOUND, compute_rate
from ..engines.rates_stream import stream_bytes_s
from ..engines.weight_copy import dequant_bytes
from ..ledger import forward_ops
from ..predict import decode_steps
from ..quant.format_key import format_key
from ..quant.kv import kv_bytes
from ..quant.schemes import scheme_for
from ..resolve import resolve_model
from ..timing import host_time
from ..workload import Workload
from .evaluate import at_row_build
from .split_rows import handoff_s


@dataclass
class RowSet:
    rows: list              # CalibrationRow, in array order
    measured: np.ndarray    # tok/s
    numer: np.ndarray       # tokens the row's time buys: 1 (decode), batch (aggregate), batch*prompt (prefill)
    # per pass
    pass_row: np.ndarray
    pass_w: np.ndarray      # decode: trapezoid weight / sum of weights (mean step); prefill: 1 per chunk
    pass_kernels: np.ndarray
    pass_tokens: np.ndarray
    # per op
    op_pass: np.ndarray
    op_row: np.ndarray
    flops: np.ndarray
    rate_key: np.ndarray    # index into ``kinds``: the operator's kind in its pass (its FLOP/s)
    kinds: list             # (row, tokens, ledger unit, attention, pairs per expert) of each distinct kind
    attn: np.ndarray        # bool: attention core over the KV cache
    tensor: np.ndarray      # bool: matmul (weight formats apply)
    wbytes: np.ndarray
    abytes: np.ndarray
    kvbytes: np.ndarray
    kv_reread: np.ndarray   # KV bytes read again by the other query heads of each group (unfused attention)
    bw: np.ndarray
    pairs_per_expert: np.ndarray   # routed experts: weight reads per pass under per-pair kernels (else 0)
    f16_bytes: np.ndarray          # an engine's F16 copy of quantized weights, a kernel before the GEMM (else 0)
    host_s: np.ndarray             # a linear mixer's ops on the host CPU in builds without them (timing.host_time)
    # {backend: launch_s} of the backends whose per-kernel cost a driver borrows (kernel_cost.driver_launch_s), as
    # this fit has them; a backend not listed: the engine tables'
    launch_of: dict = field(default_factory=dict)
    step_of: dict = field(default_factory=dict)     # {backend: fixed_s} likewise (kernel_cost.driver_fixed_s)
    # per row: the seconds a layer split's hand-offs add to its one-device passes (split_rows.handoff_s; else 0)
    handoff_s: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _passes(row, spec, storage, kvb):
    if row.kind == "decode":
        steps = decode_steps(row.context, row.prompt, max(row.gen, 1))
        wsum = sum(w for _, w in steps)
        for depth, w in steps:
            yield w / wsum, row.batch, forward_ops(spec, storage, kvb, row.batch, 1, depth)
    else:           # the row's -ub / -b micro-batches, as predict cuts them
        work = Workload(prompt=row.prompt, gen=0, context=row.context, batch=row.batch, ubatch=row.ubatch,
                        n_batch=row.n_batch)
        for depth, chunk in work.prefill_chunks():
            yield 1.0, row.batch * chunk, forward_ops(spec, storage, kvb, row.batch, chunk, depth)


def build(rows, kv_dtype: str = "f16", launch_of: dict | None = None, step_of: dict | None = None) -> RowSet:
    """Flatten the ledgers of ``rows`` (scorable CalibrationRows); ``launch_of``, ``step_of``: RowSet's."""
    kvb = kv_bytes(kv_dtype)
    P = {k: [] for k in ("row", "w", "kern", "tok")}
    O = {k: [] for k in ("pass", "row", "flops", "key", "attn", "tensor", "wb", "ab", "kv", "kvx", "bw", "ppe", "f16",
                         "host")}
    kinds: dict = {}
    measured, numer, handoff = [], [], []
    specs, priors = {}, {}
    for i, row in enumerate(rows):
        if row.model not in specs:
            specs[row.model] = resolve_model(row.model)[0]
        spec = specs[row.model]
        storage = scheme_for(row.quant, spec)
        extra = unmodelled_kernels(row.engine, spec, row.quant, row.month)   # as compat.runnable: MoE dispatch, mixers
        # as timing.PassRates: the expert loop and the F16 copy are priors read from the kernels, never fitted
        if row.engine not in priors:
            priors[row.engine] = prior_profile(row.engine)
        flags, quantized = priors[row.engine], format_key(row.quant).quantized
        graph = mixer_graph(row.engine)
        measured.append(row.tok_s)
        handoff.append(handoff_s(row))
        numer.append(row.batch * row.prompt if row.kind == "prefill" else
                     (row.batch if row.metric == "decode_aggregate" else 1))
        for w, tokens, ops in _passes(row, spec, storage, kvb):
            p = len(P["row"])
            P["row"].append(i)
            P["w"].append(w)
            P["tok"].append(tokens)
            loops = sum(expert_loop_kernels(flags, op, tokens, quantized) for op in ops)
            P["kern"].append(sum(op.kernels * op.count for op in ops) + loops + extra)
            for op in ops:
                if op.unit == "cpu":
                    continue
                O["pass"].append(p)
                O["row"].append(i)
                O["flops"].append(op.flops)
                attn = bool(op.kv_read_bytes or op.kv_write_bytes)
                O["key"].append(kinds.setdefault((i, tokens, op.unit, attn, op.pairs_per_expert), len(kinds)))
                O["attn"].append(attn)
                O["tensor"].append(op.unit == "tensor")
                O["wb"].append(op.weight_bytes)
                O["ab"].append(op.act_bytes + graph_state_bytes(op, graph, row.month))   # as PassRates.parts
                O["f16"].append(dequant_bytes(flags, op, row.quant, tokens))
                O["host"].append(host_time(op, row.engine, row.hw, tokens, row.month) if op.state_rule else 0.0)
                O["kv"].append(op.kv_read_bytes + op.kv_write_bytes      # as PassRates.time: FA_SCALAR's re-reads
                               + extra_kv_bytes(op, row.engine, row.hw, tokens))
                O["kvx"].append(op.kv_read_bytes * (op.query_heads_per_kv - 1))
                O["bw"].append(row.hw.bandwidth_bytes_s)
                O["ppe"].append(op.pairs_per_expert)
    a = np.asarray
    return RowSet(rows=list(rows), measured=a(measured, float), numer=a(numer, float),
                  pass_row=a(P["row"], int), pass_w=a(P["w"], float), pass_kernels=a(P["kern"], float),
                  pass_tokens=a(P["tok"], float),
                  op_pass=a(O["pass"], int), op_row=a(O["row"], int), flops=a(O["flops"], float),
                  rate_key=a(O["key"], int), kinds=list(kinds), attn=a(O["attn"], bool), tensor=a(O["tensor"], bool),
                  wbytes=a(O["wb"], float), abytes=a(O["ab"], float), kvbytes=a(O["kv"], float),
                  kv_reread=a(O["kvx"], float),
                  bw=a(O["bw"], float), pairs_per_expert=a(O["ppe"], float), f16_bytes=a(O["f16"], float),
                  host_s=a(O["host"], float),
                  launch_of=dict(launch_of or {}), step_of=dict(step_of or {}), handoff_s=a(handoff, float))


def profile_for(prof, row):
    """The profile of ``row``'s era: ``prof`` itself, or ``prof[row.era]`` when ``prof`` maps engine
    eras to profiles (the fit's trial profiles; an era without one takes the newest, the ``""`` key or
    the last)."""
    if not isinstance(prof, dict):
        return prof
    return prof.get(row.era) or prof.get("") or list(prof.values())[-1]


def row_profiles(rs: RowSet, prof) -> list:
    """The profile that predicts each row of ``rs``: its era's (``profile_for``) at the row's build month
    (``evaluate.at_row_build``, as ``evaluate.predicted``; a cost whose path changed within the era from ``prof``'s
    newest era: ``era_builds``), one per distinct (era, month, architecture)."""
    made = {}
    for r in rs.rows:       # the device's architecture too: whether its build replays CUDA graphs on it
        if (r.era, r.month, r.hw.arch) not in made:
            made[r.era, r.month, r.hw.arch] = at_row_build(profile_for(prof, r), r,
                                                           prof if isinstance(prof, dict) else None)
    return [made[r.era, r.month, r.hw.arch] for r in rs.rows]


def predict_rows(rs: RowSet, prof) -> np.ndarray:
    """Predicted tok/s of every row of ``rs`` under EngineProfile ``prof`` (= predict()'s figure), or
    under {era: EngineProfile} with each row predicted by its era's profile."""
    n = len(rs.rows)
    profs = row_profiles(rs, prof)
    cols = ("bw", "bw_w", "kv", "abpf", "launch", "fixed", "pairs_below", "per_head")
    v = {k: np.empty(n) for k in cols}
    for i, (r, p) in enumerate(zip(rs.rows, profs)):      # launch: under the row's driver, as get_engine's with_driver
        for k, x in zip(cols, (stream_bytes_s(p, r.hw), stream_bytes_s(p, r.hw, r.quant), p.eta_kv,
                               p.attn_bytes_per_flop, driver_launch_s(p, r.hw, rs.launch_of),
                               driver_fixed_s(p, r.hw, rs.step_of),
                               p.expert_pairs_below_tokens, p.kv_reread)):
            v[k][i] = x
    rates = [compute_rate(rs.rows[i].hw, profs[i], rs.rows[i].quant, tokens, unit, attn, ppe)
             for i, tokens, unit, attn, ppe in rs.kinds]        # as op_time: the operator's Rate
    key = rs.rate_key
    # the Rate's parts, its soft minimum with its bounds taken here over every operator at once (the sums)
    base = np.array([r.bound(INT8_KERNELS) or r.base for r in rates])[key]
    qmax = np.array([r.bound(MMQ_BOUND) for r in rates])[key]
    pmax = np.array([r.bound(BOARD_POWER) for r in rates])[key]
    has_peak = np.array([bool(r.peak) for r in rates])[key]
    p = CAP_SHARPNESS
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(qmax > 0, qmax, np.inf) ** -p + np.where(pmax > 0, pmax, np.inf) ** -p
        rate = np.where((inv > 0) & (base > 0), (base ** -p + inv) ** (-1 / p), base)
        t_c = np.where(has_peak & (rs.flops > 0), rs.flops / rate, 0.0)
    o = rs.op_row
    bw = v["bw"][o]
    ptok = rs.pass_tokens[rs.op_pass]      # as weight_reads: per-pair expert reads in small passes
    reads = np.where((rs.pairs_per_expert > 0) & (ptok < v["pairs_below"][o]), rs.pairs_per_expert, 1.0)
    kv = rs.kvbytes + rs.kv_reread * v["per_head"][o]      # as timing.kv_reads: the re-reads reaching memory
    t_m = (rs.wbytes * reads / np.where(rs.tensor, v["bw_w"][o], bw) + rs.abytes / bw
           + kv / (bw * v["kv"][o]) + np.where(rs.attn, rs.flops * v["abpf"][o], 0.0) / bw)
    # as PassRates.time: the F16 copy runs before the GEMM; the host trips after the device's part of the graph
    t_op = np.maximum(t_c, t_m) + rs.f16_bytes / bw + rs.host_s
    t_pass = np.bincount(rs.op_pass, weights=t_op, minlength=len(rs.pass_row))
    pr = rs.pass_row
    t_pass = t_pass + rs.pass_kernels * v["launch"][pr] + v["fixed"][pr]
    t_row = np.bincount(rs.pass_row, weights=t_pass * rs.pass_w, minlength=n) + rs.handoff_s
    return rs.numer / t_row
