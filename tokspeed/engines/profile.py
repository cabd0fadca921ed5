"""EngineProfile: an engine's efficiency model, from physical terms that transfer to unseen devices.

Time of one forward pass (``tokspeed.timing.pass_time``)::

    t = Σ_ops max(flops / (peak · eta_compute · ...), bytes / (bandwidth · eta_mem · ...))
        + kernels · launch_s + fixed_s

with the refinements below (the full per-operator arithmetic is ``tokspeed.timing.op_time``).

- ``version``: the engine era the values are for (``tokspeed/engines/eras.toml``; "" = unversioned).
  ``fitted.toml`` holds the newest era's values and, under ``eras``, each older era's own fixed costs,
  achievable bandwidth and compute (``get_engine(..., version=...)`` picks one).
- ``eta_mem``: fraction of peak bandwidth reached streaming weights, per memory technology (``hbm``,
  ``gddr``, ``lpddr``, ``ddr``: ``tokspeed.engines.memory``; Little's law: bytes in flight / latency
  differ by technology), else per hardware kind, else ``default``.
- ``bytes_per_core_cycle``: the kernel bound on that bandwidth: cores x clock (``tokspeed.engines.issue``,
  from the catalog FP32 peak) x this many bytes per core cycle, soft-minimum with peak x eta_mem. Fitted
  per engine era; it binds on parts with few core cycles per byte of bandwidth (A100, H100, B200, binned
  Apple chips) and not on GDDR cards.
- ``quant_flops_per_core_cycle``: the same kind of bound on prefill over quantized weights: llama.cpp's
  quantized matmuls (MMQ) unpack and scale every tile on the cores before the INT8 MMA, so they reach at
  most cores x clock x this many FLOPs, soft-minimum with the tensor figure (an A100 has half an RTX
  4090's core cycles for about the same tensor peak). Fitted for the newest era only; 0 in older eras
  (2023 builds had no INT8-tensor-core MMQ; the 2024 era's rows are mostly from before it, May 2024).
  Where the device runs those kernels on DP4A instead (Pascal, Volta below 64 tokens) or not at all (GP100,
  Volta from 64 tokens): ``tokspeed.engines.mmq``, ``mmq_unit``.
- ``mmq_dp4a``: the engine's quantized tiled matmuls run as DP4A int8 dot products on parts without tensor
  cores, in every era (ggml-cuda's MMQ since 2023: llama.cpp-cuda; priors.toml [DP4A]): the peak is then 4 x
  the FP32 figure, and the MMQ bound, where the era has one, adds the dot products' issue time to the tiles'.
- ``pj_per_flop``: the board-power bound on every tensor op of a tiled pass (prompt chunks, decode batches of more
  than ``MATVEC_MAX_TOKENS``): FLOP/s <= the device's ``tdp_w`` / this energy per FP16 FLOP, x
  ``INT8_OPS_PER_FP16_ENERGY`` on INT8 tensor cores (``power_flops``), soft-minimum with the other compute bounds
  (an RTX 6000 Ada at 300 W prefills at 0.71x an RTX 4090 at 450 W on the same die). Fitted for llama.cpp-cuda; an
  older era's value is the newest's / its ``era_compute``.
- ``expert_pairs_below_tokens``: MoE decode in small batches: below this many tokens per pass the engine
  multiplies every (token, expert) pair with its own matrix-vector kernel, so each touched expert's weights
  are read once per pair, not once per pass (llama.cpp Metal: ``mul_mv_id`` below 32 rows, ``mul_mm_id``
  from 32).
- ``bw_cap_gbps``: an optional ceiling on the bandwidth the engine's kernels pull from one device
  (0 = none; the fit no longer uses one: the memory technology's fraction replaced it).
- ``eta_format``: relative cost of dequantising a weight format in the matvec kernels (F16 = 1): a factor on
  the kernel bound where the engine has one (dequantising is core work, ``stream_bytes_s``), else on the stream.
- ``eta_kv``: fraction of bandwidth reached reading the KV cache (attention over a long context).
- ``eta_compute``: fraction of the dense FP16 tensor peak reached in prefill matmuls (per hardware kind;
  an older era's values are the newest era's x its fitted ``era_compute``).
- ``fp16_accumulate``: the engine's matmuls accumulate in FP16 (cuBLAS COMPUTE_16F) or run on INT8
  tensor cores, so on NVIDIA GeForce cards - whose catalog FP16 figure is the FP32-accumulate rate, half
  the FP16-accumulate rate - the tensor peak it can reach is twice the listed one (``tensor_peak_scale``).
- ``eta_compute_format``: relative matmul throughput of a weight format in prefill (F16 = 1): dequantising
  tiles costs ALU work, quantized kernels may use INT8 tensor cores.
- ``eta_matvec`` / ``gemm_half_tokens``: matmul efficiency by tokens in the pass. Up to
  ``MATVEC_MAX_TOKENS`` tokens (decode, small batches) engines run matrix-vector kernels (dequantise and
  dot on the SIMD ALUs) at ``eta_matvec`` of the matmul efficiency; above, tiled GEMMs whose efficiency
  ramps as ``T / (T + gemm_half_tokens)`` (a 32-token batch cannot fill the machine as a 512-token
  prefill chunk does).
- ``int8_matvec``: by format group, the fraction of a CPU's int8 dot-product rate (``Hardware.cpu_int8_ops``)
  the engine's kernels reach on one token over quantized weights (llama.cpp's CPU backend quantizes the
  token's activations to 8 bits and takes an integer dot product per weight row). The per-weight-block work
  is shared by the pass's tokens that use the block (all T, or a routed expert's pairs), the multiply-adds
  are not: rate T / (a + b T), from one token's rate to the GEMM rate (``timing.int8_bound``). Empty for
  engines that do not (every GPU engine).
- ``attn_bytes_per_flop``: memory traffic of an unfused attention per attention FLOP: without
  FlashAttention the F32 score matrix (one value per query-key pair, ~4 x head_dim + 5 FLOPs) is written,
  read and rewritten by softmax and read again by the value product, ~16 bytes per score.
- ``kv_reread``: unfused attention reads each cached K/V head once per query head of its group (ggml's
  ``mul_mat`` broadcasts a K/V head over its query heads; priors.toml [KVHEAD]), FlashAttention-style kernels
  once for the group. ``kv_reread`` is the share of those re-reads that reach memory rather than the
  GPU's cache: the KV cache is read ``1 + kv_reread x (n_heads / n_kv_heads - 1)`` times per pass
  (``timing.kv_reads``, ``Op.query_heads_per_kv``), at ``eta_kv``. One value fitted for the eras whose
  attention is unfused by default (``eras.toml`` ``flash_attention``): 1.0 on Metal, whose matrix-vector
  kernels stream a head per query head; 0.19 on CUDA, whose L2 serves most of a group's re-reads. 0 in an
  era with FlashAttention on.
- ``eta_attn``: compute efficiency of the attention core (scores, softmax, values over the KV cache)
  relative to the dense matmuls; with ``attn_bytes_per_flop`` it sets how long prompts slow prefill.
- ``launch_s``: cost per kernel launch (or per graph node), times kernels per token from the ledger.
- ``sync_s_per_thread``: a CPU engine's threads meet at a barrier after every graph node (ggml's threadpool:
  one atomic add per thread on a shared counter, each a cache-line transfer between cores), so each
  node costs ``cpu_threads x sync_s_per_thread`` on top of ``launch_s`` (``with_barrier(hw)``, called by
  ``compat.runnable`` and for the CPU stages of an offload; a machine calibration drops it).
- ``fixed_s``: per step (sampling on the CPU, synchronisation, loop control).

Values come from ``fitted.toml`` (written by ``scripts/fit_calibration.py`` on
``data/validation/calibration.csv``) where an engine has calibration rows, else from the documented
priors in ``priors.toml``, which also carry a wider error band. A backend compiled from another's
kernels (``kernels_of``: llama.cpp-rocm from llama.cpp-cuda) takes that engine's decode memory model
(``SHARED_KERNEL_FIELDS``) and keeps its own launches, prefill and band.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from .compat import backend_for, engine_defaults, engine_key, engine_names, runtime_of, sliding_window_spec
from ..errors import UserError, did_you_mean
from .eras import (era_family, era_labels, era_of, flash_attention_available, flash_attention_since, nearest_era,
                   newest_unfused_era, unfused_attention)
from .issue import core_cycles_per_s, fp32_lanes_per_core
from .memory import memory_class
from .mmq import DP4A_OPS_PER_FP32_FLOP, mmq_unit

HERE = Path(__file__).parent
MATVEC_MAX_TOKENS = 8  # llama.cpp: MMVQ_MAX_BATCH_SIZE (CUDA) and the mul_mv_ext limit (Metal) are 8 rows
# INT8 tensor ops per the energy of one FP16 tensor FLOP: every NVIDIA tensor-core generation since Turing lists
# dense INT8 at 2x its dense FP16 rate within the same board power (the catalog's int8_tops and fp16_tflops), so
# an INT8 op costs at most half (timing.op_time: the board-power bound of the INT8 MMQ matmuls)
INT8_OPS_PER_FP16_ENERGY = 2.0
CAP_SHARPNESS = 4.0   # soft-minimum exponent of the bandwidth cap: at bw = cap the result is 0.84 x cap
ENGINES = engine_names()  # the capability table's engines (capabilities.toml): ideal, llama.cpp + backends, ...


# `tokspeed measure --calibrate` stores its fit's RMS relative error; the band it gives a prediction is
# two of those in percent (x 100 for percent, x 2 for a two-sigma band: ~95 % of points of a normal spread)
CALIBRATION_BAND_SIGMAS = 2.0
CALIBRATION_MIN_BAND_PCT = 5.0   # floor: a handful of points on one machine never justifies less


def _gbs(bytes_s: float) -> str:
    return f"{bytes_s / 1e9:,.0f} GB/s"


def soft_min(*rates: float) -> float:
    """p-norm soft minimum of the non-zero ``rates`` (p = CAP_SHARPNESS): two equal bounds give 0.84 x
    either, a bound 2x the other costs 1.5 %; zeros (no such bound) are ignored."""
    xs = [x for x in rates if x]
    if len(xs) == 1:
        return xs[0]
    p = CAP_SHARPNESS
    return sum(x ** -p for x in xs) ** (-1 / p) if xs else 0.0


@dataclass(frozen=True)
class EngineProfile:
    name: str
    version: str = ""                                                    # era label ("" = unversioned)
    eta_mem: dict = field(default_factory=lambda: {"default": 1.0})      # by memory class, else kind
    eta_compute: dict = field(default_factory=lambda: {"default": 1.0})  # by hardware kind
    eta_format: dict = field(default_factory=dict)                       # by format group
    eta_compute_format: dict = field(default_factory=dict)               # by format group (prefill)
    eta_attn: float = 1.0
    eta_kv: float = 1.0
    bw_cap_gbps: float = 0.0
    quant_flops_per_core_cycle: float = 0.0   # prefill over quantized weights: cores x clock x this (0 = none)
    mmq_dp4a: bool = False       # quantized tiled matmuls as DP4A int8 dot products on parts without tensor cores
    pj_per_flop: float = 0.0     # tiled passes: FLOP/s <= board power (tdp_w) / this energy per FLOP (0 = none)
    expert_pairs_below_tokens: int = 0   # MoE: below this many tokens per pass each (token, expert) pair re-reads
    bytes_per_core_cycle: float = 0.0    # kernel bound: cores x clock x this (tokspeed.engines.issue; 0 = none)
    fp16_accumulate: bool = False
    eta_matvec: float = 1.0
    int8_matvec: dict = field(default_factory=dict)   # by format group: fraction of the CPU's int8 dot rate
    attn_bytes_per_flop: float = 0.0
    kv_reread: float = 0.0      # unfused attention: share of the per-query-head K/V re-reads reaching memory
    gemm_half_tokens: float = 0.0
    launch_s: float = 0.0
    sync_s_per_thread: float = 0.0      # CPU engines: barrier after each graph node, per thread (x cpu_threads)
    fixed_s: float = 0.0
    runtime_overhead_gib: float = 0.0
    decode_error_pct: float = 0.0     # typical |error| (p90 of the fit, or the prior's band)
    prefill_error_pct: float = 0.0
    fitted: bool = False
    source: str = ""
    runtime: str = ""                 # code underneath: "llama.cpp" for every llama.cpp backend, ollama, lm-studio
    flash_attention: bool | None = None   # attention fused or not, where the engine has the choice (llama.cpp)

    def __post_init__(self):
        if not self.runtime:
            object.__setattr__(self, "runtime", runtime_of(self.name))

    def mem_eff(self, key: str) -> float:
        """eta_mem for a memory class or hardware kind (``default`` if neither is listed)."""
        return self.eta_mem.get(key, self.eta_mem.get("default", 1.0))

    def mem_eff_for(self, hw) -> float:
        """eta_mem for a device: its memory technology if listed, else its kind, else ``default``."""
        cls = memory_class(hw)
        return self.eta_mem[cls] if cls in self.eta_mem else self.mem_eff(hw.kind)

    def compute_eff(self, hw_kind: str) -> float:
        return self.eta_compute.get(hw_kind, self.eta_compute.get("default", 1.0))

    def compute_eff_for(self, hw) -> float:
        """eta_compute for a device: its compute class (``geforce``) if listed, else its kind."""
        cls = compute_class(hw)
        if cls in self.eta_compute:
            return self.eta_compute[cls]
        return self.compute_eff(hw.kind)

    def matmul_eff(self, tokens: int) -> float:
        """Matmul efficiency for a pass over ``tokens`` tokens (0 = unknown: 1)."""
        if not tokens:
            return 1.0
        if tokens <= MATVEC_MAX_TOKENS:
            return self.eta_matvec
        return tokens / (tokens + self.gemm_half_tokens)

    def tensor_peak_scale(self, hw) -> float:
        """Usable tensor peak / listed FP16 peak: 2 on GeForce for FP16-accumulating engines, else 1."""
        return 2.0 if self.fp16_accumulate and compute_class(hw) == "geforce" else 1.0

    def stream_bytes_s(self, hw, quant: str | None = None) -> float:
        """Bandwidth this engine streams at on ``hw``: peak x eta_mem of its memory technology (at most
        the peak), softly bounded by what its kernels can issue (``kernel_bytes_s``) and by
        ``bw_cap_gbps`` where an engine sets one (p-norm soft minimum, p = CAP_SHARPNESS: a queue
        saturating rather than a hard wall). ``quant``: weights of that format, whose ``eta_format`` scales
        the kernel bound -- dequantising is work on the cores, not on the memory, so a device with core cycles
        to spare per byte streams K-quants near its memory's rate and one without slows -- or, for an engine
        without a kernel bound, the whole stream (on a device with no known core count, neither: the bound and
        the format's share of it are both unknown); None: traffic with no format (activations, KV cache)."""
        fmt = self.format_eff(quant) if quant else 1.0
        bw = hw.bandwidth_bytes_s * min(self.mem_eff_for(hw), 1.0)
        if not self.bytes_per_core_cycle:         # an engine without a kernel bound: the format costs everywhere
            return soft_min(bw, self.bw_cap_gbps * 1e9) * fmt
        # fitted as a factor on the kernel bound: on a device whose cores are not known (a probed or custom
        # device, no FP32 figure) neither the bound nor the format's share of it is charged
        return soft_min(bw, self.kernel_bytes_s(hw) * fmt, self.bw_cap_gbps * 1e9)

    def stream_how(self, hw, quant: str | None = None) -> str:
        """How ``stream_bytes_s`` comes about on ``hw`` for ``quant`` weights, in one line with its numbers
        (explain prints it)."""
        peak, stream, eta = hw.bandwidth_bytes_s, self.stream_bytes_s(hw, quant), min(self.mem_eff_for(hw), 1.0)
        fmt = self.format_eff(quant) if quant else 1.0
        group = f"eta_format[{format_group(quant)}] {fmt:.2f}" if fmt != 1.0 else ""
        what = f"{quant} weights" if quant else "weights"
        out = (f"{what} stream at {_gbs(stream)} ({stream / peak:.0%} of {_gbs(peak)}): "
               f"{memory_class(hw).upper()} at {_gbs(peak)} x eta_mem {eta:.2f} = {_gbs(peak * eta)}")
        kern = self.kernel_bytes_s(hw)
        if kern:
            out += (f", kernel bound {core_cycles_per_s(hw) / 1e9:,.0f} G core cycles/s x "
                    f"{self.bytes_per_core_cycle:.3g} B" + (f" x {group}" if group else "")
                    + f" = {_gbs(kern * fmt)}")
        elif group:
            out += f", x {group}"
        if self.bw_cap_gbps:
            out += f", engine cap {_gbs(self.bw_cap_gbps * 1e9)}"
        return out + (" (soft minimum)" if kern or self.bw_cap_gbps else "")

    def kernel_bytes_s(self, hw) -> float:
        """What the engine's matvec kernels can pull on ``hw`` whatever the memory: cores x clock x
        ``bytes_per_core_cycle`` (``tokspeed.engines.issue``); 0 = no such bound known."""
        return core_cycles_per_s(hw) * self.bytes_per_core_cycle if self.bytes_per_core_cycle else 0.0

    def runs_int8_mma(self, quant: str) -> bool:
        """Whether the engine runs its tiled matmuls over ``quant`` weights as MMQ kernels on the INT8 tensor cores of
        a part that has them (llama.cpp's CUDA build, newest era: the engine has a ``quant_flops_per_core_cycle`` and
        the weights are quantized); which units a device gives them is ``mmq_unit``."""
        return bool(self.quant_flops_per_core_cycle) and format_group(quant) != "float"

    def mmq_unit(self, hw, quant: str, tokens: int) -> str:
        """The units this engine's matmuls over ``quant`` weights run a tiled pass of ``tokens`` tokens on, on ``hw``
        (``tokspeed.engines.mmq``): ``mma`` (INT8 tensor cores, where the engine runs MMQ there: ``runs_int8_mma``),
        ``dp4a`` (int8 dot products on the cores of a part without tensor cores -- Pascal, Volta below 64 tokens --
        for an engine with ``mmq_dp4a``, in every era), or ``""``: float weights, a pass of matrix-vector kernels
        (``MATVEC_MAX_TOKENS`` tokens or fewer: no tiles), or the engine dequantises and multiplies with its float
        GEMM."""
        unit = mmq_unit(hw, tokens) if format_group(quant) != "float" and tokens > MATVEC_MAX_TOKENS else ""
        if unit == "mma":
            return unit if self.quant_flops_per_core_cycle else ""
        return unit if unit == "dp4a" and self.mmq_dp4a else ""

    def quant_matmul_flops(self, hw, quant: str, tokens: int) -> float:
        """What a tiled matmul over quantized weights can reach on ``hw`` whatever the tensor peak, where the engine's
        MMQ kernels run a pass of ``tokens`` tokens there (``mmq_unit``): cores x clock x ``quant_flops_per_core_cycle``
        (unpacking and scaling tiles and feeding the INT8 MMA: work per core cycle, ``tokspeed.engines.issue``). On
        DP4A the dot products issue from the same lanes as that work, so their times add: cores x clock /
        (1 / quant_flops_per_core_cycle + 1 / DP4A's FLOPs per core cycle, 4 x 2 x the FP32 lanes). 0 for float
        weights, without MMQ there, or where unknown."""
        unit = self.mmq_unit(hw, quant, tokens)
        if not (unit and self.quant_flops_per_core_cycle):
            return 0.0
        per_cycle = self.quant_flops_per_core_cycle
        if unit == "dp4a":
            per_cycle = 1.0 / (1.0 / per_cycle + 1.0 / (DP4A_OPS_PER_FP32_FLOP * 2 * fp32_lanes_per_core(hw)))
        return core_cycles_per_s(hw) * per_cycle

    def power_flops(self, hw, int8: bool = False) -> float:
        """What a tiled pass's tensor ops (a prompt chunk, a decode batch of more than MATVEC_MAX_TOKENS tokens) can
        reach on ``hw`` within its board power: ``tdp_w`` / ``pj_per_flop`` (the energy per FP16 tensor FLOP at the
        board under this engine's kernels, one value for every weight format and process node), x
        ``INT8_OPS_PER_FP16_ENERGY`` for matmuls on INT8 tensor cores (``int8``: ``mmq_unit`` is ``mma``); 0 where the
        board power or the energy is unknown. ``tdp_w`` is the listed board or module power: on a superchip or
        SoC (GH200, DGX Spark, Jetson) it includes the CPU, which a tiled GPU pass leaves mostly idle."""
        if not (self.pj_per_flop and getattr(hw, "tdp_w", 0.0)):
            return 0.0
        return hw.tdp_w / (self.pj_per_flop * 1e-12) * (INT8_OPS_PER_FP16_ENERGY if int8 else 1.0)

    def weight_reads(self, op, tokens: int) -> float:
        """How many times a pass reads ``op``'s weights: routed experts under an engine that multiplies each
        (token, expert) pair with its own matrix-vector kernel below ``expert_pairs_below_tokens`` tokens
        (llama.cpp Metal's mul_mv_id) read each touched expert once per pair; otherwise once."""
        if self.expert_pairs_below_tokens and op.pairs_per_expert and tokens < self.expert_pairs_below_tokens:
            return op.pairs_per_expert
        return 1.0

    def with_barrier(self, hw) -> "EngineProfile":
        """This profile on ``hw``'s threads: a CPU engine's per-node barrier (``sync_s_per_thread`` x the
        device's ``cpu_threads``) joins ``launch_s``; unchanged for other engines or an unknown thread count."""
        threads = getattr(hw, "cpu_threads", 0)
        if not (self.sync_s_per_thread and threads):
            return self
        return replace(self, launch_s=self.launch_s + threads * self.sync_s_per_thread)

    def int8_matvec_flops(self, hw, quant: str) -> float:
        """FLOP/s of one token's matmuls over ``quant`` weights where the engine runs them as int8 dot products on a
        CPU: the CPU's int8 rate x ``int8_matvec``; 0 where it does not. Per weight block the work is mostly its
        own (loading, unpacking, scaling), shared by the tokens of a pass that use it: ``timing.int8_bound`` takes a
        pass from this (one token) towards the GEMM rate (a prompt chunk)."""
        frac = self.int8_matvec.get(format_group(quant), 0.0) if self.int8_matvec else 0.0
        return hw.cpu_int8_ops * frac if frac else 0.0

    def format_eff(self, quant: str) -> float:
        return self.eta_format.get(format_group(quant), 1.0)

    def compute_format_eff(self, quant: str) -> float:
        return self.eta_compute_format.get(format_group(quant), 1.0)

    @property
    def is_ideal(self) -> bool:
        return self.name == "ideal"


FORMAT_GROUPS = ("float", "q8", "legacy", "mxfp4", "kquant", "int4")


def format_group(quant: str) -> str:
    """Weight formats grouped by the kind of dequantisation their kernels do; an unknown format is an error
    (it used to fall through to "int4")."""
    from ..quant.dynamic import plain_format       # UD-*, ik_llama.cpp, MLX, NVFP4, NAME@size (issue 27)
    q = plain_format(quant)
    if q.lower() in FORMAT_GROUPS:          # already a group (the fit passes group names)
        return q.lower()
    if q in ("F32", "F16", "BF16", "FP16", "F64"):
        return "float"
    if q in ("Q8_0", "Q8_1", "Q8_K", "INT8", "FP8"):
        return "q8"
    if q in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"):
        return "legacy"
    if q == "MXFP4":
        return "mxfp4"
    if q.startswith(("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ1_", "IQ2_", "IQ3_", "IQ4_XS", "TQ1_0", "TQ2_0")):
        return "kquant"
    if q.startswith(("INT4", "GPTQ", "AWQ", "EXL2-")):
        return "int4"
    raise UserError(f"unknown weight format {quant!r} (no kernel group for it)",
                    "use one of the --quant names (tokspeed predict --help)")


def compute_class(hw) -> str:
    """``geforce`` for devices whose catalog FP16 figure is the FP32-accumulate rate, half their FP16-accumulate
    rate (the hardware field ``fp16_accumulate_2x``: NVIDIA GeForce per the Ampere GA102 / Ada AD102 /
    Blackwell GB202 whitepapers, and the L40), else the hardware kind."""
    return "geforce" if getattr(hw, "fp16_accumulate_2x", False) else hw.kind


IDEAL = EngineProfile("ideal", source="roofline bound: eta = 1, no overhead (the seeds' formula)")


def load_table(fname: str) -> dict:
    """One engine table (``priors.toml`` or ``fitted.toml``) as {engine: {key: value}}; {} if absent."""
    p = HERE / fname
    if not p.is_file():
        return {}
    with open(p, "rb") as f:
        return tomllib.load(f)


@lru_cache(maxsize=1)
def _tables() -> dict:
    data = {}
    for fname in ("priors.toml", "fitted.toml"):
        for name, entry in load_table(fname).items():
            data[name] = {**data.get(name, {}), **entry}
    return data


# A llama.cpp backend built from another backend's kernel source (priors.toml ``kernels_of``: the HIP build
# is the CUDA source compiled with hipcc) shares with it the memory side of decode -- the achievable
# fraction per memory technology, the kernel bound per core cycle, the format and KV-cache efficiencies --
# and the host loop's per-step cost; launches, prefill compute and the band stay its own. It takes the
# newest fitted era's values for every era, as any engine without rows has one set of values: an older
# era's fitted values trade bandwidth against launches that ran without graphs, so carried over alone they
# would make an old build faster.
SHARED_KERNEL_FIELDS = ("eta_mem", "bytes_per_core_cycle", "eta_format", "eta_kv", "fixed_s")


def with_shared_kernels(entry: dict, shared: dict, of: str, era: str = "") -> dict:
    """``entry`` (a table entry with ``kernels_of`` popped) completed by ``shared``, the entry of the
    engine ``of`` whose kernels it runs, saying so in its source. The entry's own values win (a fit of
    the engine itself, should it get rows, overrides what it borrowed)."""
    if of not in _tables() or "kernels_of" in _tables()[of]:
        raise ValueError(f"priors.toml: kernels_of = {of!r} must name an engine with its own values")
    out = {**{k: shared[k] for k in SHARED_KERNEL_FIELDS if k in shared}, **entry}
    out["source"] = (f"{entry.get('source', '')}; decode memory model (eta_mem, kernel bound, eta_format, "
                     f"eta_kv, fixed_s) of {of}{' era ' + era if era else ''}, whose kernels it compiles")
    return out


def prior_profile(engine: str) -> EngineProfile:
    """The documented prior of an engine, ignoring any fit (the fit's starting point)."""
    entry = dict(load_table("priors.toml")[engine])
    of = entry.pop("kernels_of", None)
    if of:
        entry = with_shared_kernels(entry, load_table("priors.toml")[of], of)
    return EngineProfile(name=engine, **entry)


def resolve_backend(engine: str, hardware) -> str:
    """``llama.cpp`` (and ollama, lm-studio) pick their backend by device class from the capability table:
    CUDA on NVIDIA, Metal on Apple, ROCm on AMD (Instinct and Radeon), SYCL on Intel, CPU on CPU memory
    systems; Vulkan only when asked. No backend (TPU, Gaudi) is a UserError naming the engines that run there."""
    e = engine.strip().lower()
    return backend_for(e, hardware) if e == "llama.cpp" else e


LAYERED_ON_LLAMA_CPP = ("ollama", "lm-studio")   # capabilities.toml: runtime llama.cpp, own backend map


def layered_profile(name: str, hardware=None, version=None, flash_attention: bool | None = None) -> EngineProfile:
    """ollama / lm-studio: the llama.cpp backend they run on this device (fitted where it has rows), with their
    own FlashAttention default (capabilities.toml) unless ``flash_attention`` says otherwise, plus their own
    per-token cost (``extra_fixed_s``: server, sampling and detokenising outside llama.cpp) and band from
    priors.toml."""
    own = dict(load_table("priors.toml")[name])
    base_name = backend_for(name, hardware) if hardware is not None else "llama.cpp-cuda"
    if flash_attention is None:
        flash_attention = engine_defaults(name).get("flash_attention", True)
    # the backend with this machine's calibration applied last (get_engine does), as it measured what it measured
    base = get_engine(base_name, hardware, version=version, flash_attention=flash_attention)
    extra = own.pop("extra_fixed_s", 0.0)
    return replace(base, name=name, runtime="llama.cpp", fixed_s=base.fixed_s + extra,
                   source=f"{own.pop('source', name)}; over {base.name}: {base.source}", fitted=False, **own)


def attention_spec(profile: EngineProfile, spec):
    """The model as this engine runs it: a sliding window the engine ignores becomes full attention (the
    capability table's ``sliding_window`` / ``full_attention_families``: llama.cpp runs Mistral v0.1, whose
    GGUF carries no window, with full attention; Gemma 2/3, gpt-oss and Phi-3 GGUFs keep theirs)."""
    return sliding_window_spec(profile, spec)


# engines whose decode a `tokspeed measure` backend reproduces on this machine
MEASURED_BY = {"gpt-fast": "torch", "transformers": "torch", "llama.cpp-cpu": "llama.cpp",
               "llama.cpp-cuda": "llama.cpp", "llama.cpp-metal": "llama.cpp", "llama.cpp-vulkan": "llama.cpp",
               "llama.cpp-rocm": "llama.cpp", "llama.cpp-sycl": "llama.cpp"}


def calibrated(profile: EngineProfile, hardware) -> EngineProfile:
    """The profile with this machine's own decode measurement (``tokspeed measure --calibrate``: the
    *machine calibration*, as opposed to the *engine fit* on published rows in ``fitted.toml``), when
    ``hardware`` is a probed profile carrying one for the backend that runs this engine.

    The machine calibration is ``t = weight_bytes / (BW · eta_mem) + kv_bytes / (BW · eta_kv) + overhead_s``
    with BW the probe's read bandwidth (stored as ``eta_mem``; ``eta_memory``, its older name, is read
    too); it replaces eta_mem, eta_kv and fixed_s (launches are inside overhead_s) and its own fit error
    becomes the error band. A calibration ``attention_net`` counted, as KV bytes, the attention traffic its run's
    engine model adds beyond one read of the cache (re-reads, unfused scores: ``measure.predicted``), so its
    eta_kv holds for either attention and the profile keeps its own re-reads and score traffic."""
    entry = (getattr(hardware, "calibration", None) or {}).get(MEASURED_BY.get(profile.name, ""))
    eta_key = "eta_mem" if (entry or {}).get("eta_mem") else "eta_memory"
    if not entry or not entry.get(eta_key):
        return profile
    scale = float(entry.get("bandwidth_gbps") or hardware.bandwidth_gbps) / hardware.bandwidth_gbps
    eta = float(entry[eta_key]) * scale
    eta_kv = float(entry.get("eta_kv") or entry[eta_key]) * scale / eta
    band = max(CALIBRATION_MIN_BAND_PCT,
               CALIBRATION_BAND_SIGMAS * 100 * float(entry.get("rms_rel_error") or 0.0))
    # a calibration fitted net of its run's attention traffic (attention_net) keeps the engine's re-reads; an older
    # one holds the K/V reads of its run's attention in its measured eta_kv
    reread = profile.kv_reread if entry.get("attention_net") else 0.0
    # the measured eta already holds whatever saturates this device's bandwidth: no cap on top
    return replace(profile, eta_mem={"default": eta}, eta_format={}, eta_kv=eta_kv, launch_s=0.0, bw_cap_gbps=0.0,
                   bytes_per_core_cycle=0.0, sync_s_per_thread=0.0,   # the measured overhead holds the barriers
                   int8_matvec={},       # and the measured eta whatever the CPU's int8 matvec made of the step
                   kv_reread=reread,
                   fixed_s=float(entry.get("overhead_s") or 0.0), decode_error_pct=band,
                   source=f"this machine's calibration ({entry.get('n_points', '?')} measured points, "
                          f"{entry.get('date', '')}) over {profile.source}")


def engine_entry(engine: str, version=None, flash_attention: bool | None = None) -> tuple[dict, str]:
    """The table entry of a (resolved) engine for an era, and that era's label.

    ``fitted.toml`` holds an engine's newest fitted era at the top (its ``version``) and older eras
    under ``eras``; ``version`` (a build ``b6000``, a month ``2025-08``, a year or an era label) selects
    one, the nearest fitted era standing in for one without rows. No version: the newest.
    ``flash_attention``: attention fused or not (``with_attention``); None: as the era runs it by default."""
    entry, label = _own_entry(engine, version)
    asked = era_of(engine, version) if version is not None and label else label     # not the nearest fitted
    if asked:
        entry = with_attention(engine, entry, label, runs_flash_attention(engine, asked, flash_attention))
    of = entry.pop("kernels_of", None)
    if of:                                    # its decode memory model is that engine's (newest era)
        shared, shared_era = engine_entry(of)
        entry = with_shared_kernels(entry, shared, of, shared_era)
    return entry, label


def runs_flash_attention(engine: str, era: str, asked: bool | None = None) -> bool:
    """Whether an era of a llama.cpp backend runs attention fused: ``asked`` (True/False: ``-fa on|off``), else
    its default -- FlashAttention on by default in the era (eras.toml; ``-fa auto`` from 2025 builds) where the
    backend has the kernel (capabilities.toml ``defaults.flash_attention``; SYCL is assumed not to)."""
    if asked is not None:
        return bool(asked)
    return not unfused_attention(engine, era) and bool(engine_defaults(engine).get("flash_attention", False))


def with_attention(engine: str, entry: dict, label: str, fused: bool) -> dict:
    """``entry`` (values of the fitted era ``label``, or priors for every era) with the attention values that
    go with ``fused``: the score-matrix traffic per attention FLOP (``attn_bytes_per_flop``) and the share of
    per-query-head K/V re-reads reaching memory (``kv_reread``), each taken from an era that ran that way.

    - fused: one read of each K/V head, and the traffic of the newest era that ran fused by default where it
      was fitted (Metal's FlashAttention kernel keeps some of its own; CUDA's none), else none;
    - unfused: the values as they are when they come from an unfused era or from priors (the priors are the
      unfused kernels'), else those of the newest era that ran unfused by default."""
    out = {**entry, "flash_attention": fused}
    top = _tables()[engine]
    newest = top.get("version", "")             # the newest fitted era ("" = priors only)
    from_fused_era = bool(newest) and not unfused_attention(engine, label)
    if fused:
        out["kv_reread"] = 0.0
        if not from_fused_era:
            fused_fit = bool(newest) and not unfused_attention(engine, newest)
            out["attn_bytes_per_flop"] = top.get("attn_bytes_per_flop", 0.0) if fused_fit else 0.0
    elif from_fused_era:
        src = _own_entry(engine, newest_unfused_era(engine))[0]
        out.update(kv_reread=src.get("kv_reread", 0.0), attn_bytes_per_flop=src.get("attn_bytes_per_flop", 0.0))
    return out


def _own_entry(engine: str, version=None) -> tuple[dict, str]:
    """``engine_entry`` before ``kernels_of`` is resolved."""
    entry = dict(_tables()[engine])
    eras = entry.pop("eras", {})
    base = entry.pop("version", "")
    if not era_family(engine):
        if version is not None:
            era_of(engine, version)          # raises: this engine has no versions
        return entry, ""
    if version is None:
        return entry, base or era_labels(engine)[-1]
    label = era_of(engine, version)
    if label not in era_labels(engine):
        raise UserError(f"unknown {engine} era {version!r}", did_you_mean(label, era_labels(engine))
                        or "use a build number (b6000), a year-month (2025-08) or one of "
                        + ", ".join(era_labels(engine)))
    if not base:                              # priors only: one set of values for every era
        return entry, label
    label = nearest_era(engine, label, [base, *eras])
    return ({**entry, **eras[label]} if label != base else entry), label


def get_engine(engine, hardware=None, version=None, flash_attention: bool | None = None) -> EngineProfile:
    """The profile for an engine name (``llama.cpp`` resolved to its backend on ``hardware``) and era
    (``version``: see ``engine_entry``), with attention fused or not as ``flash_attention`` says (llama.cpp's
    ``-fa on|off``; None: the default of the era and front end); an EngineProfile passes through unchanged
    (the calibration fit evaluates trial profiles this way)."""
    if isinstance(engine, EngineProfile):
        if flash_attention is not None:
            raise UserError("flash_attention applies to an engine given by name, not to an engine profile")
        return engine
    e = engine_key(engine)
    if e not in ENGINES:
        raise UserError(f"unknown engine {engine!r}", did_you_mean(e, ENGINES) or "choose one of " + ", ".join(ENGINES))
    if e == "llama.cpp" and hardware is not None:
        e = resolve_backend(e, hardware)
    if flash_attention is not None:
        check_flash_attention(e, version, flash_attention)
    if e in LAYERED_ON_LLAMA_CPP:
        return layered_profile(e, hardware, version, flash_attention)
    if e == "ideal":
        if version is not None:
            era_of(e, version)
        return IDEAL
    if e not in _tables():
        e = "llama.cpp-cuda" if e == "llama.cpp" else e
    entry, label = engine_entry(e, version, flash_attention)
    if label:       # say which era the answer is for (the text output prints the engine's source)
        entry["source"] = (f"{era_family(e)} era {label}"
                           + (" (the newest fitted; --engine-version for another)" if version is None else "")
                           + (f", FlashAttention {'on' if flash_attention else 'off'}" if flash_attention is not None
                              else "")
                           + f"; {entry.get('source', '')}")
    profile = EngineProfile(name=e, version=label, **entry)
    from .bands import with_band          # off the fitted vendors: the held-out band (issue 27)
    return calibrated(with_band(profile, hardware), hardware) if hardware is not None else profile


def check_engine_build(engine: str, engine_version=None, flash_attention: bool | None = None) -> None:
    """UserError for a build or -fa ``engine`` cannot take, before any device is tried (``plan``)."""
    if flash_attention is not None:
        check_flash_attention(engine, engine_version, flash_attention)
    elif engine_version is not None:
        era_of(engine, engine_version)


def check_flash_attention(engine: str, version, on) -> None:
    """UserError unless ``engine`` lets its user choose FlashAttention (llama.cpp, its backends and front ends:
    ``-fa on|off``) and, for ``on``, its build has the kernels (``eras.flash_attention_available``) and its
    backend too (capabilities.toml: SYCL is assumed to have none)."""
    if not isinstance(on, bool):
        raise UserError(f"flash_attention must be True, False or None, not {on!r}")
    if runtime_of(engine) != "llama.cpp":
        what = ("the ideal bound reads the KV cache once and has no kernels" if engine == "ideal"
                else f"{engine} runs its own attention kernels")
        raise UserError(f"FlashAttention on or off is a llama.cpp setting (-fa); {what}",
                        "drop --flash-attn, or use --engine llama.cpp, ollama or lm-studio")
    if version is not None:
        era_of(engine, version)              # a malformed or too early version says so first
    if on and version is not None and not flash_attention_available(engine, version):
        raise UserError(f"llama.cpp {version} has no FlashAttention (-fa arrived in "
                        f"{flash_attention_since(engine)} builds)",
                        "use --flash-attn off, or a later --engine-version")
    if on and engine.startswith("llama.cpp-") and not engine_defaults(engine).get("flash_attention", False):
        raise UserError(f"{engine} is assumed to have no FlashAttention kernel (capabilities.toml): -fa on would "
                        "run its attention elsewhere", "use --flash-attn off or auto")
