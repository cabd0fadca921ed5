"""The journey of one token: every stage in the seeds' order, with its hardware, bytes, FLOPs and time.

Built from the same ledger and roofline as ``tokspeed.predict`` (``forward_ops`` + ``pass_time``), so the
stage times sum to the predicted step time exactly:

    step time = Σ_ops roofline time  +  kernels × launch_s  +  fixed_s
                (GPU stages)            (CPU: launch kernels)  (CPU: sampling + loop control)

Decode explains one step at KV depth ``context``; prefill (``tokens`` > 1) explains the whole prompt,
summed over the same micro-batches ``predict`` uses, so it sums to ``Prediction.prefill.seconds``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..engines.backends import sycl_bf16_copy
from ..engines.compat import moe_dispatch_how, unmodelled_kernels
from ..engines.cpu import barrier_scale
from ..engines.era_builds import launch_note
from ..engines.fa_tiles import extra_kv_bytes
from ..engines.graph_kernels import op_kernels
from ..engines.host_ops import host_note, host_run
from ..engines.moe_dispatch import expert_loop_kernels
from ..engines.rates import int8_rates, matmul_rate, op_rate
from ..engines.rates_stream import stream_rate, weight_reads
from ..engines.weight_copy import dequant_bytes
from ..ledger import Role, Scope
from ..predict import UBATCH, fit_of, prefill_passes
from ..quant.format_key import format_key
from ..quant.kv import kv_bytes
from ..timing import host_engine, host_time, kv_reads, pass_time
from ..units import fmt_seconds
from ..workload import Workload
from .rates_text import cpu_attention_how, expert_tiles_how, matmul_how, stream_how
from .roles import compute_unit, data_source, launch_path

# operator role -> (row key, label); rows appear in the order of the ledger. Every Role has a row: a role
# added to the ledger without one here fails loudly (``_group``).
_GROUPS = {
    Role.EMBED: ("embedding", "embedding lookup"),
    Role.ATTN_NORM: ("attn_norm", "attention RMSNorm"),
    Role.QKV: ("qkv", "QKV projection"),
    Role.ROPE: ("rope", "RoPE"),
    Role.ATTN_CORE: ("attention", "attention over the KV cache"),
    Role.O_PROJ: ("o_proj", "output projection"),
    Role.LINEAR_PROJ: ("linear_proj", "linear-attention/SSM projections"),
    Role.STATE_SCAN: ("state_scan", "recurrent state update (fixed size)"),
    Role.ATTN_RESIDUAL: ("residual_attn", "residual add"),
    Role.FFN_NORM: ("ffn_norm", "FFN RMSNorm"),
    Role.ROUTER: ("router", "MoE router"),
    Role.EXPERTS: ("experts", "experts gate/up/down"),
    Role.EXPERTS_ACT: ("experts_act", "experts activation"),
    Role.SHARED_EXPERTS: ("shared", "shared expert gate/up/down"),
    Role.SHARED_ACT: ("shared_act", "shared expert activation"),
    Role.MLP: ("ffn", "FFN gate/up/down"),
    Role.MLP_ACT: ("ffn_act", "FFN activation"),
    Role.FFN_RESIDUAL: ("residual_ffn", "residual add"),
    Role.PER_LAYER: ("per_layer", "AltUp, LAuReL, per-layer input gate"),
    Role.FINAL_NORM: ("final_norm", "final RMSNorm"),
    Role.LM_HEAD: ("lm_head", "LM head"),
    Role.SAMPLE: ("sampling", "sampling + loop control"),
}
# Gemma 3n's per-layer machinery also runs before and after the layers: a row of its own in each place
_SCOPED_GROUPS = {(Role.PER_LAYER, Scope.INPUT): ("per_layer_in", "per-layer input projection, AltUp expansion"),
                  (Role.PER_LAYER, Scope.HEAD): ("altup_merge", "AltUp merge")}
_PHASE = {Scope.INPUT: "embedding", Scope.DENSE: "layer", Scope.MOE: "layer", Scope.HEAD: "head"}


@dataclass
class Stage:
    key: str
    label: str
    phase: str              # cpu | embedding | layer (× n_layers) | head
    unit: str               # the hardware doing it, in words
    data_from: str          # where its bytes come from
    layers: int = 1         # how many layers the row stands for
    kernels: int = 0        # kernel launches per step (all layers)
    flops: float = 0.0
    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    act_bytes: float = 0.0
    seconds: float = 0.0
    compute_s: float = 0.0  # part of ``seconds`` that is compute-bound
    share: float = 0.0
    note: str = ""
    ops: list = field(default_factory=list)
    measured_s: float | None = None

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes + self.act_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    @property
    def bound(self) -> str:
        if self.unit == "CPU":
            return "cpu"
        if not self.seconds:
            return "-"
        return "compute" if self.compute_s > self.seconds / 2 else "memory"

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(bytes=self.bytes, intensity=self.intensity, bound=self.bound)
        return d


@dataclass
class Journey:
    mode: str                   # decode | prefill
    tokens: int                 # tokens in the pass (1 for decode, N for prefill) per sequence
    context: int                # tokens already cached before it
    batch: int
    stages: list[Stage]
    total_s: float              # sum of the stage times
    predicted_s: float          # what predict() says for the same step / prefill
    ridge_flops_per_byte: float
    kernels: int
    launch_s: float
    fixed_s: float
    stream_gbps: float = 0.0    # the bandwidth the engine streams weights at (rates_stream.stream_bytes_s)
    stream_how: str = ""        # ... and how it comes about
    compute_how: str = ""       # prefill: how the weight matmuls' FLOP/s comes about (rates_text.matmul_how)

    @property
    def per_token_s(self) -> float:
        return self.total_s / self.tokens

    @property
    def tok_s(self) -> float:
        return self.batch * self.tokens / self.total_s if self.total_s else 0.0

    def to_dict(self) -> dict:
        return {"mode": self.mode, "tokens": self.tokens, "context": self.context, "batch": self.batch,
                "total_s": self.total_s, "predicted_s": self.predicted_s, "per_token_s": self.per_token_s,
                "tok_s": self.tok_s, "ridge_flops_per_byte": self.ridge_flops_per_byte,
                "kernels": self.kernels, "launch_s": self.launch_s, "fixed_s": self.fixed_s,
                "stream_gbps": self.stream_gbps, "stream_how": self.stream_how, "compute_how": self.compute_how,
                "stages": [s.to_dict() for s in self.stages]}


def _group(op) -> tuple[str, str]:
    scoped = _SCOPED_GROUPS.get((op.role, op.scope))
    if scoped:
        return scoped
    try:
        return _GROUPS[op.role]
    except KeyError:
        raise ValueError(f"explain has no row for operator role {op.role!r} ({op.name})") from None


def passes(pred, mode: str):
    """The ledger passes the prediction is made of: [(ops, tokens in the pass)]. Decode: one step at depth
    ``context + prompt``; prefill: the prompt's micro-batches (``Workload.prefill_chunks``)."""
    if mode == "decode":
        return [(pred.decode_ops(pred.context + pred.prompt), pred.batch)]
    work = Workload(prompt=pred.prompt, gen=pred.gen, context=pred.context, batch=pred.batch)
    fit = fit_of(pred.engine_profile, pred.hw, pred.layout)          # a server engine: its prefill budget per step
    return [(ops, pred.batch * chunk) for ops, _, chunk in prefill_passes(
        pred.spec, pred.storage, kv_bytes(pred.kv_dtype), work, fit["token_budget"] if fit else UBATCH)]


def int8_note(eng, hw, quant: str, tokens: int) -> str:
    """How a CPU engine's int8 kernels set the compute rate of a ``tokens``-token decode pass ("" where they do not
    matter: no int8 kernels, float weights, or enough tokens to come within 10 % of the GEMM rate). Dense
    weights; a routed expert's block is shared by fewer tokens (``rates.int8_bound``)."""
    mv, gemm, rate = int8_rates(eng, hw, quant, tokens)
    if not mv or rate >= 0.9 * gemm:
        return ""
    if tokens == 1:
        return (f"one token's matmuls run as int8 dot products at {mv / 1e9:,.0f} GFLOP/s ({mv / hw.cpu_int8_ops:.3g} x "
                f"the CPU's {hw.cpu_int8_ops / 1e12:.3g} int8 TOPS), not at the ridge's FP32 figure")
    return (f"{tokens} tokens share each weight block's int8 work: {rate / 1e9:,.0f} GFLOP/s, between one token's "
            f"{mv / 1e9:,.0f} and the {gemm / 1e9:,.0f} GFLOP/s GEMM rate")


def _bound_note(st: Stage, ridge: float, int8_how: str = "") -> str:
    """Say why a stage sits on the other side of the ridge than its FLOP/B suggests (``int8_how``: how a CPU
    engine's int8 matrix-vector kernels set the compute rate of this pass, where they do)."""
    if st.unit == "CPU" or not st.flops or not st.bytes or not ridge:
        return ""
    if st.bound == "compute" and int8_how and st.weight_bytes:
        return f"compute-bound: {int8_how}"
    if st.bound == "memory" and st.intensity > ridge:
        return ("memory-bound although its FLOP/B is above the ridge: the engine model adds traffic the ledger "
                "does not count here (unfused attention writes and reads its score matrix) and reaches only part "
                "of the peaks")
    if st.bound == "compute" and st.intensity < ridge:
        return "compute-bound below the ridge: this engine reaches only a fraction of peak FLOP/s for this shape"
    return ""


def _serving_constants(pred, stages, samp, n_pass: int):
    """A server engine's passes as ``predict`` times them: every stage x the fitted ``gpu_scale``, the host time
    per step ``step_s`` with the sampling (``serving.fitted``; one device: no collectives to rescale)."""
    fit = fit_of(pred.engine_profile, pred.hw, pred.layout)
    if fit is None:
        return
    for st in stages:
        st.seconds *= fit["gpu_scale"]
        st.compute_s *= fit["gpu_scale"]
    samp.seconds += fit["step_s"] * n_pass
    samp.note += f"; times x {fit['gpu_scale']:.3f} and + {fmt_seconds(fit['step_s'])} host time per step " \
                 f"({fit['source']}, fitted on serving rows)"


def build_journey(pred, mode: str = "decode") -> Journey:
    """Stages of one decode step (``mode='decode'``) or of the whole prefill (``'prefill'``) of ``pred``."""
    hw, eng = pred.hw, pred.engine_profile
    rows: dict[str, Stage] = {}
    kernels = 0
    threads = hw.cpu_threads
    barrier = bool(eng.sync_s_per_thread and threads)   # a CPU engine's threads meet after each graph node
    cpu_launch = Stage("launch", "sync threads" if barrier else "launch kernels", "cpu", "CPU",
                       "thread-pool barrier after each node" if barrier else launch_path(hw), note="")
    tokenize = Stage("tokenize", "tokenize", "cpu", "CPU", "text in system RAM",
                     note=("the sampled id is fed straight back; text is tokenized once, for the prompt "
                           "(not modelled: microseconds)") if mode == "decode" else
                     "the prompt is tokenized once before the prefill (not modelled: microseconds)")
    n_pass, int8_how, first_tokens = 0, "", 0
    quantized = format_key(pred.quant).quantized if pred.quant else False
    # launches the graph adds that the ledger does not list (MoE dispatch, hybrid layers, FP8 activation
    # quantisation): compat.runnable put them in the profile's per-pass cost; shown here with the other launches
    graph_extra = unmodelled_kernels(eng, pred.spec, pred.quant or "") if pred.spec is not None else 0
    step_s = eng.fixed_s - graph_extra * eng.launch_s
    for ops, tokens in passes(pred, mode):
        n_pass += 1
        first_tokens = first_tokens or tokens
        int8_how = int8_note(eng, hw, pred.quant, tokens) if mode == "decode" else ""
        pt = pass_time(ops, hw, eng, pred.quant, tokens)
        for op, t, bound in pt.op_times:
            key, label = _group(op)
            st = rows.get(key)
            if st is None:      # what runs the kernel: the Rate's unit (the engine's kernels on this device)
                unit = op_rate(op, hw, eng, pred.quant, tokens).unit if op.unit == "tensor" else compute_unit(op.unit,
                                                                                                               hw)
                st = rows[key] = Stage(key, label, _PHASE[op.scope], unit, data_source(op, hw), layers=op.count)
            if op.name not in st.ops:
                st.ops.append(op.name)
            st.flops += op.flops
            st.weight_bytes += op.weight_bytes * weight_reads(eng, op, tokens)   # as the engine reads them
            tiles = extra_kv_bytes(op, eng.name, hw, tokens)    # as PassRates.time
            st.kv_bytes += op.kv_read_bytes + op.kv_write_bytes + tiles
            if tiles:
                st.note = (f"ggml-vulkan's scalar FlashAttention (FA_SCALAR) reads the cache once per block of query "
                           f"rows: {(op.kv_read_bytes + tiles) / op.kv_read_bytes:,.0f}x one read, counted in the bytes")
            if kv_reads(op, eng) > 1:
                st.note = (f"unfused attention: each query head reads its K/V head, {eng.kv_reread:.0%} of the "
                           f"re-reads from memory: {kv_reads(op, eng):.3g}x the cache counted here (FlashAttention "
                           f"reads it once)")
            if op.role == Role.ATTN_CORE and not st.note:
                st.note = cpu_attention_how(eng, hw, tokens)
            if op.pairs_per_expert and op.unit == "tensor" and not st.note:
                st.note = expert_tiles_how(eng, hw, pred.quant, tokens, op.pairs_per_expert)
            f16 = dequant_bytes(eng, op, pred.quant, tokens)     # the engine's F16 copy of the weights, if it makes one
            loop = round(expert_loop_kernels(eng, op, tokens, quantized))   # launches of a host loop over the experts
            if f16 or loop:
                bits = 32 if sycl_bf16_copy(eng.name, pred.quant) else 16
                st.note = (f"{eng.name} writes the weights out as {bits}-bit floats before each GEMM (counted in "
                           "the bytes)"
                           if f16 else "") + ("; " if f16 and loop else "") + (
                    f"one GEMM per touched expert: {loop / op.count:,.0f} launches per layer" if loop else "")
            host = host_time(op, eng.name, hw, tokens, eng.build_month) if op.state_rule else 0.0
            if host:            # a linear mixer's ops on the host CPU in this build (as PassRates.time)
                st.note = host_note(host_run(op, eng.name, eng.build_month), eng.name, eng.build_month, hw,
                                    host_engine(hw)[0].name, host)
            st.act_bytes += op.act_bytes + f16
            launched = op_kernels(eng, op)       # the engine's fusions (graph_kernels)
            st.kernels += round(launched) + loop
            st.seconds += t
            if bound == "compute":
                st.compute_s += t
            kernels += round(launched) + loop
        cpu_launch.seconds += pt.overhead_s - step_s
        rows["sampling"].seconds += step_s
        kernels += graph_extra
    cpu_launch.kernels = kernels
    moe_how = moe_dispatch_how(eng, pred.spec) if graph_extra else ""
    extra_note = (f" (with {graph_extra:,} the graph adds per pass that the operators above do not list: MoE "
                  f"dispatch, hybrid layers, FP8 quantisation" + (f"; {moe_how}" if moe_how else "") + ")"
                  ) if graph_extra else ""
    per = f" × {n_pass} passes" if n_pass > 1 else ""
    if barrier:
        per_thread = eng.sync_s_per_thread * barrier_scale(hw)         # more where the threads span CCDs
        own = eng.launch_s - threads * per_thread                      # what the engine has besides the barrier
        cpu_launch.note = (f"{kernels // n_pass:,} graph nodes per pass{extra_note} × {fmt_seconds(eng.launch_s)} "
                           f"({threads} threads × {per_thread * 1e9:.0f} ns at the barrier"
                           + (f" + {fmt_seconds(own)} launch" if own > 1e-12 else "") + f"){per}")
    else:
        cpu_launch.note = (f"{kernels // n_pass:,} kernels per pass{extra_note} × {fmt_seconds(eng.launch_s)}{per}"
                           + launch_note(eng, hw) if eng.launch_s else "no launch cost in this engine model")
    samp = rows["sampling"]
    samp.unit = "CPU"
    samp.note = (f"{fmt_seconds(step_s)} per pass{per}: copy logits, sample, stop check, next step"
                 if step_s > 1e-12 else "no per-step CPU cost in this engine model")
    _serving_constants(pred, [cpu_launch, *rows.values()], samp, n_pass)
    for st in rows.values():
        bound = _bound_note(st, hw.ridge_flops_per_byte, int8_how)
        st.note = "; ".join(n for n in (st.note, bound) if n)
    stages = [tokenize, cpu_launch] + [s for k, s in rows.items() if k != "sampling"] + [samp]
    total = sum(s.seconds for s in stages)
    for s in stages:
        s.share = s.seconds / total if total else 0.0
    predicted = pred.decode.ms_per_token / 1e3 if mode == "decode" else pred.prefill.seconds
    stream = stream_rate(eng, hw, pred.quant)
    tokens = 1 if mode == "decode" else pred.prompt
    return Journey(mode, tokens, pred.context + (pred.prompt if mode == "decode" else 0), pred.batch, stages,
                   total, predicted, hw.ridge_flops_per_byte, kernels // max(n_pass, 1), eng.launch_s, step_s,
                   stream.value / 1e9, stream_how(stream),
                   matmul_how(matmul_rate(hw, eng, pred.quant, first_tokens), hw, eng, pred.quant, first_tokens)
                   if mode == "prefill" else "")
