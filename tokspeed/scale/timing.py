"""One forward pass timed over a layout.

The pass's operator ledger (``ledger.forward_ops``, whole model) is cut into stages: layer operators
by the share of layers the stage holds (MoE and dense-FFN operators by the share of *their* layers),
the embedding to the first stage, final norm / LM head / sampling to the last. A TP stage's operators
are divided over its ranks (matmuls, attention heads, vocab-parallel embedding and LM head); norms and
residual adds are replicated; the KV cache per rank follows ``layout.kv_share``.

Each stage is timed by the engine's roofline (``timing.pass_time``) on its own device, and the
links add:
- TP: ``syncs_per_layer`` all-reduces per layer of the hidden state (tokens x d_model x 2 bytes), timed as
  the serving engine runs them by size (``collectives``: custom one-shot / two-shot, NCCL), NCCL's ring as
  fitted for other engines, or for llama.cpp's row split the inputs and outputs of every matmul (``tp_link_s``);
- stage hand-offs: tokens x d_model x ``handoff_value_bytes`` over the GPU link or the host link (a serving
  engine's NCCL send / receive: ``collectives.p2p_s``);
- streaming offload: every streamed module (whole tensors: the embedding table, every expert) over
  the host link, each pass;
- llama.cpp offload: layers in RAM run on the CPU, but batches of >= 32 tokens (prefill) are sent to
  the GPU with their weight tensors copied over the host link (ggml-backend scheduler,
  ``offload_op``); the embedding lookup stays on the CPU.

The per-step overheads (launches, sampling, ``fixed_s``) are counted once per step, not per stage.
Pipelined decode (``pp``) keeps m = min(batch, stages) micro-batches in flight: one step (a token
for every sequence) takes ``max(Σ stage + hand-offs, m · slowest stage)`` at micro-batch size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engines.backends import copies_through_host
from ..engines.profile import IDEAL
from ..derived import derived
from ..ledger import NORM_ROLES, Op, PassOps, Role, Scope, Segment
from ..timing import PassTime, ledger_totals, pass_time
from .collectives import engine_allreduce_s, engine_p2p_s
from .interconnect import SYNC_LATENCY_S, host_link
from .layout import Layout, Stage, kv_share

GPU_OFFLOAD_MIN_BATCH = 32   # llama.cpp: ops on CPU-held weights go to the GPU for batches >= 32 tokens


def _layer_fraction(op: Op, a: int, b: int) -> float:
    """Share of the op's own layers (``op.layers``) that fall in layers [a, b)."""
    lo, hi = op.layers
    if hi <= lo:
        return 0.0
    return max(0, min(b, hi) - max(a, lo)) / (hi - lo)


def _scaled(op: Op, f: float, weight_f: float | None = None) -> Op:
    wf = f if weight_f is None else weight_f
    return replace(op, count=max(1, round(op.count * f)), flops=op.flops * f, weight_bytes=op.weight_bytes * wf,
                   act_bytes=op.act_bytes * f, kv_read_bytes=op.kv_read_bytes * f, kv_write_bytes=op.kv_write_bytes * f)


# replicated on every TP rank: the CPU's share, norms and residual adds, and the (small) MoE router
_TP_REPLICATED = NORM_ROLES | {Role.SAMPLE, Role.ROUTER, Role.PER_LAYER}   # Gemma 3n's small per-layer matrices:
#                                                                           held whole by every rank (assumed)


def _tp_shard(op: Op, spec, tp: int) -> Op:
    if tp <= 1 or op.role in _TP_REPLICATED:
        return op
    if op.role is Role.ATTN_CORE:
        s = kv_share(spec, tp)
        # a rank holds n_heads / tp query heads over its share s of the K/V heads (one, replicated, past n_kv)
        return replace(op, flops=op.flops / tp, act_bytes=op.act_bytes / tp, kv_read_bytes=op.kv_read_bytes * s,
                       kv_write_bytes=op.kv_write_bytes * s, kv_row_bytes=op.kv_row_bytes / tp,
                       query_heads_per_kv=max(1.0, op.query_heads_per_kv / (tp * s)))
    return replace(op, flops=op.flops / tp, weight_bytes=op.weight_bytes / tp, act_bytes=op.act_bytes / tp)


def _stage_fraction(op: Op, stage: Stage) -> float:
    if op.scope is Scope.INPUT:
        return 1.0 if stage.embedding else 0.0
    if op.scope is Scope.HEAD:
        return 1.0 if stage.head else 0.0
    return _layer_fraction(op, *stage.layers)


def _is_expert_op(op: Op) -> bool:
    return op.role in (Role.EXPERTS, Role.EXPERTS_ACT)


def stage_ops(ops: list[Op], spec, stage: Stage, micro: int = 1, shared: bool = False, memo: dict | None = None
              ) -> list[Op]:
    """The stage's share of a whole-model ledger, per TP rank, for one of ``micro`` micro-batches.
    ``shared``: the shares of the ledger's shared depth-free segments are cut once per stage and kept on the
    segment (``tokspeed.derived``), equal cuts as one object; ``memo`` (one pass over a layout): the pass's own
    attention core is cut once per stage size, as it spans every layer alike."""
    segs = getattr(ops, "segments", None)
    if not shared or not segs:
        return _stage_list(ops, spec, stage, micro)
    return _joined(_stage_parts(segs, spec, stage, micro, memo)[0])


def _joined(parts: tuple) -> PassOps:
    out = PassOps(op for part in parts for op in part)
    out.segments = parts
    return out


def _stage_parts(segs, spec, stage: Stage, micro: int, memo: dict | None) -> tuple[tuple, tuple | None]:
    """(the stage's cut of each of a pass's segments, what names those cuts: the kept cut objects and the attention
    core's key in ``memo``; None where a cut is made afresh). The core stays a list: a ``pass_time`` keeps the
    timing of tuples for good, and the core is new at every depth."""
    parts, names = [], []
    for seg in segs:
        if isinstance(seg, tuple):
            kept = derived(seg)
            cuts = kept.setdefault("stage_cuts", {})
            key = (tuple(stage.layers), stage.embedding, stage.head, stage.tp, stage.ops, micro)
            hit = cuts.get(key)
            if hit is None:
                made = Segment(_stage_list(seg, spec, stage, micro))
                hit = cuts[key] = kept.setdefault("cut_values", {}).setdefault(made, made)   # equal stages: one cut
            parts.append(hit)
            names.append(hit)
        elif memo is not None and all(op.layers == (0, spec.n_layers) for op in seg):
            key = ("core", stage.n_layers, stage.tp, stage.ops, micro)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = _stage_list(seg, spec, stage, micro)
            parts.append(hit)
            names.append(key)
        else:
            parts.append(_stage_list(seg, spec, stage, micro))
            names.append(None)
    return tuple(parts), (None if None in names else tuple(names))


def _stage_list(ops, spec, stage: Stage, micro: int) -> list[Op]:
    out = []
    for op in ops:
        if stage.ops != "all" and _is_expert_op(op) != (stage.ops == "experts"):
            continue
        f = _stage_fraction(op, stage)
        if f <= 0:
            continue
        o = _scaled(op, f / micro, weight_f=f) if micro > 1 else _scaled(op, f)
        out.append(_tp_shard(o, spec, stage.tp))
    return out


def tp_link_s(layout: Layout, stage: Stage, ops: list[Op], spec, tokens: float, micro: int, ideal: bool,
              engine: str = "") -> float:
    """Link time of one TP stage for one pass (of one micro-batch).

    TP: ``syncs_per_layer`` all-reduces of tokens x d_model x 2 bytes per layer: the algorithm a serving
    ``engine`` picks for that size (``collectives.engine_allreduce_s``), else NCCL's ring as fitted.
    llama.cpp row split (``-sm row``): every weight matmul's input leaves the main GPU for the others and
    their output rows come back, as F32 (2x the ledger's F16 activation bytes), (N-1)/N of it crossing
    the main GPU's link; one sequential peer copy per other GPU per matmul."""
    link, n = layout.link, stage.tp
    if n <= 1 or link is None:
        return 0.0
    if layout.row_split:
        moved = sum(op.act_bytes * _stage_fraction(op, stage) for op in ops
                    if op.unit == "tensor" and op.weight_bytes and op.role is not Role.EMBED)
        moved = moved / micro * 2 * (n - 1) / n
        syncs = layout.syncs_per_layer * stage.n_layers
        return moved / link.per_direction_bytes_s + (0.0 if ideal else syncs * (n - 1) * SYNC_LATENCY_S["peer-copy"])
    msg = tokens * spec.d_model * 2.0
    one = None if ideal else engine_allreduce_s(link, stage.hw, engine, msg, n, tokens)
    return layout.syncs_per_layer * stage.n_layers * (link.allreduce_s(msg, n, ideal) if one is None else one)


def pipelines_prompt(layout: Layout | None, prof) -> bool:
    """Whether the prompt's micro-batches flow through the layout's stages together: llama.cpp's layer split with
    every layer on the GPUs (llama-context.cpp ``pipeline_parallel``: several devices, split mode layer, all layers
    offloaded, no tensor overrides; ggml_backend_sched keeps up to GGML_SCHED_MAX_COPIES = 4 micro-batches in flight,
    as many as one ``NBATCH`` call holds). From llama.cpp PR #6017 (2024-03); not the 2023 era. Not on a backend
    whose copy between devices is staged through host memory, blocking (``engines.backends.copies_through_host``:
    Vulkan, ROCm without peer access): the stages take each micro-batch in turn."""
    if layout is None or layout.parallel.style != "split" or layout.offload != "none" or len(layout.stages) < 2:
        return False
    return engine_pipelines_prompt(getattr(prof, "name", ""), getattr(prof, "runtime", ""),
                                   getattr(prof, "version", None))


def splits_layers(runtime: str) -> bool:
    """Whether ``runtime``'s layer split is the one ``pipelines_prompt`` and ``split_in_turn`` describe: llama.cpp's
    (its backends, ollama, lm-studio)."""
    return runtime == "llama.cpp"


def engine_pipelines_prompt(backend: str, runtime: str, era: str | None) -> bool:
    """The engine's half of ``pipelines_prompt``: llama.cpp after its 2023 era, on a backend whose copies between
    devices do not stage through host memory."""
    return splits_layers(runtime) and era != "2023" and not copies_through_host(backend)


def split_in_turn(layout: Layout | None, prof, batch: int, pipelined: bool = False) -> bool:
    """Whether every pass of a multi-device layout runs its stages one after another on the GPUs: llama.cpp's layer
    split, all layers on the GPUs, at batch 1, its prompt not ``pipelined``. Such a pass costs the one-device pass
    plus its hand-offs, so the fit takes rows of it as its device's own (``calibration.split_rows``) and the band
    adds no multi-device term."""
    return (layout is not None and layout.parallel.style == "split" and layout.offload == "none"
            and len(layout.stages) > 1 and batch == 1 and splits_layers(getattr(prof, "runtime", ""))
            and not pipelined)


def pipelined_s(pt: PassTime, first: bool) -> float:
    """A prompt micro-batch's share of a pipelined call: the first fills the pipeline (every stage in turn), each
    later one adds its slowest stage (the stages work on different micro-batches at once)."""
    if first or not pt.stages:
        return pt.seconds
    times = [s["seconds"] for s in pt.stages]
    return pt.seconds - sum(times) + max(times)


def layout_pass(layout: Layout, ops: list[Op], spec, quant: str, prof, batch: int, n_tokens: int,
                shared: bool = False) -> PassTime:
    """Time of one pass of ``ops`` (batch x n_tokens new tokens) over the layout. ``prof`` is the
    main engine (IDEAL for the bound: every stage ideal, links at bandwidth without latency)."""
    ideal = prof is IDEAL or getattr(prof, "is_ideal", False)
    tokens = batch * n_tokens
    micro = min(batch, layout.parallel.pp) if (layout.parallel.micro_batched and n_tokens == 1) else 1
    d = spec.d_model
    comp = mem = over = link = 0.0
    stage_rows, stage_times = [], []
    segs = getattr(ops, "segments", None) if shared else None
    memo = {} if segs else None        # stages of one size share their cut of this pass and its time
    for s in layout.stages:
        sops = _stage_parts(segs, spec, s, micro, memo) if segs else stage_ops(ops, spec, s, micro)
        eng = IDEAL if ideal else s.engine
        extra = 0.0
        if s.kind == "cpu" and tokens >= GPU_OFFLOAD_MIN_BATCH and s.gpu is not None:
            gpu_eng = IDEAL if ideal else prof
            pt = _stage_time(memo, sops, s.gpu, gpu_eng, quant, round(tokens / micro), shared)
            extra = layout.host.transfer_s(s.host_bytes, ideal)
            eng = gpu_eng
        else:
            pt = _stage_time(memo, sops, s.hw, eng, quant, round(tokens / micro), shared)
        if s.kind == "stream":
            extra = layout.host.transfer_s(s.host_bytes, ideal)
        extra += tp_link_s(layout, s, ops, spec, tokens / micro, micro, ideal, getattr(prof, "name", ""))
        body = pt.seconds - eng.fixed_s
        comp += pt.compute_s
        mem += pt.memory_s
        over += pt.overhead_s - eng.fixed_s
        link += extra
        stage_times.append(body + extra)
        stage_rows.append({"name": s.name, "kind": s.kind, "hardware": s.hw.id, "layers": list(s.layers),
                           "output": bool(s.head), "seconds": body + extra, "link_s": extra})
    handoff = 0.0
    for s in layout.stages:
        if s.ops == "experts" and s.kind == "cpu":   # to the CPU and back in every such layer
            handoff += 2 * s.n_layers * layout.host.transfer_s(tokens / micro * d * layout.handoff_value_bytes, ideal)
    for s0, s1 in zip(layout.stages, layout.stages[1:]):
        if s1.ops == "experts":
            continue
        via = layout.host if "cpu" in (s0.kind, s1.kind) else (layout.pipe_link or layout.link)
        if s0.kind == "stream" or s1.kind == "stream" or via is None:
            continue      # streamed layers run on the GPU that holds the activations
        nbytes = tokens / micro * d * layout.handoff_value_bytes
        if via is not layout.host and not ideal and copies_through_host(prof.name):
            # device -> host staging buffer -> device, each a blocking copy over the host link
            handoff += 2 * (layout.host or host_link(s0.hw)).transfer_s(nbytes)
            continue
        p2p = None if ideal or via is layout.host else engine_p2p_s(via, s0.hw, getattr(prof, "name", ""), nbytes)
        handoff += via.transfer_s(nbytes, ideal) if p2p is None else p2p
    link += handoff
    fixed = 0.0 if ideal else prof.fixed_s
    over += fixed
    seconds = sum(stage_times) + handoff
    if micro > 1:
        seconds = max(seconds, micro * max(stage_times))
    seconds += fixed
    nbytes, wbytes, kv, flops = ledger_totals(ops, shared)
    return PassTime(seconds, comp, mem, over, nbytes, wbytes, kv, flops, [], link_s=link, stages=stage_rows)


def _stage_time(memo: dict | None, sops, hw, engine, quant: str, tokens: int, shared: bool) -> PassTime:
    """``pass_time`` of a stage's operators (a list; with ``memo``, ``_stage_parts``'s (parts, names)), once per pass
    for stages whose cuts have the same names: equal cuts are kept as one object, compared by identity first."""
    if memo is None:
        return pass_time(sops, hw, engine, quant, tokens, shared)
    parts, names = sops
    if names is None:
        return pass_time(_joined(parts), hw, engine, quant, tokens, shared)
    engines = memo.setdefault("engines", [])     # profiles hold dicts (no value hash): told apart by identity
    slot = next((i for i, e in enumerate(engines) if e is engine), None)
    if slot is None:
        slot = len(engines)
        engines.append(engine)
    key = ("time", names, hw, slot, quant, tokens)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = pass_time(_joined(parts), hw, engine, quant, tokens, shared)
    return hit


@dataclass
class LayoutTimer:
    """The timer (``tokspeed.timing.Timer``) of a multi-device layout: ``layout_pass``."""
    layout: Layout
    spec: object
    quant: str

    def __call__(self, ops: list[Op], engine, batch: int, n_tokens: int) -> PassTime:
        return layout_pass(self.layout, ops, self.spec, self.quant, engine, batch, n_tokens, shared=True)
