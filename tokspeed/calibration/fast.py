"""Vectorised ``predict`` over many calibration rows for many trial engine profiles (the fit).

The operator ledger of every pass a row needs (decode steps as the KV cache grows, prefill
micro-batches) is built once with ``tokspeed.ledger.forward_ops`` and ``tokspeed.predict.decode_steps``
and flattened into numpy arrays; evaluating a profile then costs a few array operations instead of
thousands of ``op_time`` calls. The arithmetic mirrors ``tokspeed.timing.op_time``/``pass_time``
(``tests/test_calibration_fit.py`` holds the two equal on a sample of rows). Not mirrored: what
``compat.runnable`` adds for a device -- a SoC's CPU-cluster view and a CPU engine's per-node barrier
(``EngineProfile.with_barrier``) --, and a CPU engine's int8 matrix-vector rate (``int8_matvec``), as no scored
row runs llama.cpp-cpu; a CPU row would need all three; nor the ideal engine's choice of DP4A on Pascal
(``timing.weight_matmul_peak``), as the fit never evaluates the ideal. Needs numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engines.issue import core_cycles_per_s
from ..engines.mmq import DP4A_OPS_PER_FP32_FLOP, mmq_unit
from ..engines.profile import CAP_SHARPNESS, INT8_OPS_PER_FP16_ENERGY, MATVEC_MAX_TOKENS, format_group
from ..timing import F32_NAMES, op_peak


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
    peak: np.ndarray
    attn: np.ndarray        # bool: attention core over the KV cache
    tensor: np.ndarray      # bool: matmul (weight formats apply)
    wbytes: np.ndarray
    abytes: np.ndarray
    kvbytes: np.ndarray
    kv_reread: np.ndarray   # KV bytes read again by the other query heads of each group (unfused attention)
    bw: np.ndarray
    pairs_per_expert: np.ndarray   # routed experts: weight reads per pass under per-pair kernels (else 0)
    # weight matmuls of tiled passes: the units an MMQ engine runs them on there (engines.mmq: 2 INT8 tensor
    # cores, 1 DP4A, 0 none), and the DP4A peak that replaces the tensor peak where it is 1
    mmq: np.ndarray
    dp4a_peak: np.ndarray


MMQ_CODES = {"mma": 2, "dp4a": 1, "": 0}


def _passes(row, spec, storage, kvb):
    from ..ledger import forward_ops
    from ..memory import UBATCH
    from ..predict import decode_steps

    if row.kind == "decode":
        steps = decode_steps(row.context, row.prompt, max(row.gen, 1))
        wsum = sum(w for _, w in steps)
        for depth, w in steps:
            yield w / wsum, row.batch, forward_ops(spec, storage, kvb, row.batch, 1, depth)
    else:
        done = 0
        while done < row.prompt:
            chunk = min(UBATCH, row.prompt - done)
            yield 1.0, row.batch * chunk, forward_ops(spec, storage, kvb, row.batch, chunk, row.context + done)
            done += chunk


def build(rows, kv_dtype: str = "f16") -> RowSet:
    """Flatten the ledgers of ``rows`` (scorable CalibrationRows)."""
    from ..engines.compat import unmodelled_kernels
    from ..resolve import resolve_model
    from ..quant.kv import kv_bytes
    from ..quant.schemes import scheme_for

    kvb = kv_bytes(kv_dtype)
    P = {k: [] for k in ("row", "w", "kern", "tok")}
    O = {k: [] for k in ("pass", "row", "flops", "peak", "attn", "tensor", "wb", "ab", "kv", "kvx", "bw", "ppe",
                         "mmq", "dp4a")}
    measured, numer = [], []
    specs = {}
    for i, row in enumerate(rows):
        if row.model not in specs:
            specs[row.model] = resolve_model(row.model)[0]
        spec = specs[row.model]
        storage = scheme_for(row.quant, spec)
        extra = unmodelled_kernels(row.engine, spec, row.quant)   # as compat.runnable: MoE dispatch (moe_dispatch.py)
        measured.append(row.tok_s)
        numer.append(row.batch * row.prompt if row.kind == "prefill" else
                     (row.batch if row.metric == "decode_aggregate" else 1))
        for w, tokens, ops in _passes(row, spec, storage, kvb):
            p = len(P["row"])
            P["row"].append(i)
            P["w"].append(w)
            P["tok"].append(tokens)
            P["kern"].append(sum(op.kernels * op.count for op in ops) + extra)
            for op in ops:
                if op.unit == "cpu":
                    continue
                O["pass"].append(p)
                O["row"].append(i)
                O["flops"].append(op.flops)
                O["peak"].append(op_peak(op, row.hw, row.quant))
                O["attn"].append(bool(op.kv_read_bytes or op.kv_write_bytes))
                O["tensor"].append(op.unit == "tensor")
                O["wb"].append(op.weight_bytes)
                O["ab"].append(op.act_bytes)
                O["kv"].append(op.kv_read_bytes + op.kv_write_bytes)
                O["kvx"].append(op.kv_read_bytes * (op.query_heads_per_kv - 1))
                O["bw"].append(row.hw.bandwidth_bytes_s)
                O["ppe"].append(op.pairs_per_expert)
                tiled = op.unit == "tensor" and not O["attn"][-1] and tokens > MATVEC_MAX_TOKENS
                O["mmq"].append(MMQ_CODES[mmq_unit(row.hw, tokens)] if tiled else 0)
                O["dp4a"].append(DP4A_OPS_PER_FP32_FLOP * row.hw.vector_flops)
    a = np.asarray
    return RowSet(rows=list(rows), measured=a(measured, float), numer=a(numer, float),
                  pass_row=a(P["row"], int), pass_w=a(P["w"], float), pass_kernels=a(P["kern"], float),
                  pass_tokens=a(P["tok"], float),
                  op_pass=a(O["pass"], int), op_row=a(O["row"], int), flops=a(O["flops"], float),
                  peak=a(O["peak"], float), attn=a(O["attn"], bool), tensor=a(O["tensor"], bool),
                  wbytes=a(O["wb"], float), abytes=a(O["ab"], float), kvbytes=a(O["kv"], float),
                  kv_reread=a(O["kvx"], float),
                  bw=a(O["bw"], float), pairs_per_expert=a(O["ppe"], float), mmq=a(O["mmq"], int),
                  dp4a_peak=a(O["dp4a"], float))


def profile_for(prof, row):
    """The profile that predicts ``row``: ``prof`` itself, or ``prof[row.era]`` when ``prof`` maps engine
    eras to profiles (the fit's trial profiles; an era without one takes the newest, the ``""`` key or
    the last)."""
    if not isinstance(prof, dict):
        return prof
    return prof.get(row.era) or prof.get("") or list(prof.values())[-1]


def predict_rows(rs: RowSet, prof) -> np.ndarray:
    """Predicted tok/s of every row of ``rs`` under EngineProfile ``prof`` (= predict()'s figure), or
    under {era: EngineProfile} with each row predicted by its era's profile."""
    n = len(rs.rows)
    cols = ("bw", "eta_c", "scale", "bw_w", "eta_cf", "matvec", "half", "attn", "kv", "abpf", "launch", "fixed",
            "qmax", "pairs_below", "per_head", "pmax", "int8", "dp4a", "f32")
    v = {k: np.empty(n) for k in cols}
    for i, r in enumerate(rs.rows):
        p = profile_for(prof, r)
        for k, x in zip(cols, (p.stream_bytes_s(r.hw), p.compute_eff_for(r.hw), p.tensor_peak_scale(r.hw),
                               p.stream_bytes_s(r.hw, r.quant), p.compute_format_eff(r.quant), p.eta_matvec,
                               p.gemm_half_tokens, p.eta_attn, p.eta_kv, p.attn_bytes_per_flop, p.launch_s,
                               p.fixed_s, core_cycles_per_s(r.hw) * p.quant_flops_per_core_cycle,
                               p.expert_pairs_below_tokens,
                               p.kv_reread, p.power_flops(r.hw), p.runs_int8_mma(r.quant),
                               p.mmq_dp4a and format_group(r.quant) != "float", r.quant in F32_NAMES)):
            v[k][i] = x
    o = rs.op_row
    tok = rs.pass_tokens[rs.op_pass]
    ramp = np.where(tok <= MATVEC_MAX_TOKENS, v["matvec"][o], tok / (tok + v["half"][o]))
    ec = v["eta_c"][o] * np.where(rs.attn, v["attn"][o], np.where(rs.tensor, v["eta_cf"][o] * ramp, 1.0))
    # as EngineProfile.mmq_unit: the device's units where the engine runs MMQ kernels on them
    mmq = np.where((rs.mmq == 2) & (v["int8"][o] > 0), 2, np.where((rs.mmq == 1) & (v["dp4a"][o] > 0), 1, 0))
    # as weight_matmul_peak and op_time: the GeForce doubling is of the tensor figure (not DP4A's, not an F32 model's)
    ec = ec * np.where(rs.tensor & (mmq != 1) & ~v["f32"][o].astype(bool), v["scale"][o], 1.0)
    ec = np.minimum(ec, 1.0)      # as op_time: the listed peak stays the bound
    rate = np.where(mmq == 1, rs.dp4a_peak, rs.peak) * ec      # as timing.weight_matmul_peak
    qmax = np.where(mmq > 0, v["qmax"][o], 0.0)
    with np.errstate(divide="ignore"):       # as quant_matmul_flops: on DP4A the dot products' issue time adds
        qmax = np.where((mmq == 1) & (qmax > 0), 1.0 / (1.0 / qmax + 1.0 / rs.dp4a_peak), qmax) * ramp
    with np.errstate(divide="ignore", invalid="ignore"):
        sharp = CAP_SHARPNESS   # as op_time: soft minimum with the quantized-matmul bound where there is one
        pmax = np.where(rs.tensor & (tok > MATVEC_MAX_TOKENS),      # the board-power bound, INT8 under MMQ
                        v["pmax"][o] * np.where(mmq == 2, INT8_OPS_PER_FP16_ENERGY, 1.0), 0.0)
        inv = (np.where(qmax > 0, qmax, np.inf) ** -sharp + np.where(pmax > 0, pmax, np.inf) ** -sharp)
        rate = np.where((inv > 0) & (rate > 0), (rate ** -sharp + inv) ** (-1 / sharp), rate)
        t_c = np.where((rs.peak > 0) & (rs.flops > 0), rs.flops / rate, 0.0)
    bw = v["bw"][o]
    ptok = rs.pass_tokens[rs.op_pass]      # as EngineProfile.weight_reads: per-pair expert reads in small passes
    reads = np.where((rs.pairs_per_expert > 0) & (ptok < v["pairs_below"][o]), rs.pairs_per_expert, 1.0)
    kv = rs.kvbytes + rs.kv_reread * v["per_head"][o]      # as timing.kv_reads: the re-reads reaching memory
    t_m = (rs.wbytes * reads / np.where(rs.tensor, v["bw_w"][o], bw) + rs.abytes / bw
           + kv / (bw * v["kv"][o]) + np.where(rs.attn, rs.flops * v["abpf"][o], 0.0) / bw)
    t_op = np.maximum(t_c, t_m)
    t_pass = np.bincount(rs.op_pass, weights=t_op, minlength=len(rs.pass_row))
    pr = rs.pass_row
    t_pass = t_pass + rs.pass_kernels * v["launch"][pr] + v["fixed"][pr]
    t_row = np.bincount(rs.pass_row, weights=t_pass * rs.pass_w, minlength=n)
    return rs.numer / t_row
