"""EngineProfile: an engine's efficiency model, from physical terms that transfer to unseen devices.

The record holds the values; the rates they make are computed in ``tokspeed.engines.rates`` (FLOP/s: ``compute_rate``)
and ``tokspeed.engines.rates_stream`` (bytes/s); the tables they come from are read by ``tokspeed.engines.tables``.

Time of one forward pass (``tokspeed.timing.pass_time``)::

    t = Σ_ops max(flops / (peak · eta_compute · ...), bytes / (bandwidth · eta_mem · ...))
        + kernels · launch_s + fixed_s

with the refinements below (the full per-operator arithmetic is ``tokspeed.timing.op_time`` over the rates).

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
  Volta from 64 tokens): ``tokspeed.engines.mmq``, ``rates.mmq_kernel``.
- ``mmq_dp4a``: the engine's quantized tiled matmuls run as DP4A int8 dot products on parts without tensor
  cores, in every era (ggml-cuda's MMQ since 2023: llama.cpp-cuda; priors.toml [DP4A]): the peak is then 4 x
  the FP32 figure, and the MMQ bound, where the era has one, adds the dot products' issue time to the tiles'.
- ``pj_per_flop``: the board-power bound on every tensor op of a tiled pass (prompt chunks, decode batches of more
  than ``MATVEC_MAX_TOKENS``): FLOP/s <= the device's ``tdp_w`` / this energy per FP16 FLOP, x
  ``INT8_OPS_PER_FP16_ENERGY`` on INT8 tensor cores (``power_flops``), soft-minimum with the other compute bounds
  (an RTX 6000 Ada at 300 W prefills at 0.71x an RTX 4090 at 450 W on the same die). Fitted for llama.cpp-cuda; an
  older era's value is the newest's / its ``era_compute``.
- ``expert_pairs_below_tokens``: MoE decode in small batches: below this many tokens per pass the engine multiplies
  every (token, expert) pair with its own matrix-vector kernel, so each touched expert's weights are read once per
  pair, not once per pass (llama.cpp Metal: ``mul_mv_id`` below 32 rows, ``mul_mm_id`` from 32).
- ``expert_loop_kernels`` / ``copies_weights_for_gemm``: an engine whose multi-token ``mul_mat_id`` loops over the
  touched experts on the host (launches per expert) and which copies a matmul's weights to memory before its GEMM
  (ggml-sycl: quantized prompt weights to F16, BF16 to F32 in every pass): ``moe_dispatch``, ``weight_copy``.
- ``bw_cap_gbps``: a ceiling on one device's bandwidth (0 = none; the fit uses none: eta_mem replaced it).
- ``eta_format``: relative cost of dequantising a weight format in the matvec kernels (F16 = 1): a factor on
  the kernel bound where the engine has one (dequantising is core work, ``stream_bytes_s``), else on the stream.
- ``eta_kv``: fraction of bandwidth reached reading the KV cache (attention over a long context).
- ``eta_compute``: fraction of the dense FP16 tensor peak reached in prefill matmuls (per hardware kind;
  an older era's values are the newest era's x its fitted ``era_compute``).
- ``fp16_accumulate``: the engine's matmuls accumulate in FP16 (cuBLAS COMPUTE_16F) or run on INT8
  tensor cores, so on NVIDIA GeForce cards - whose catalog FP16 figure is the FP32-accumulate rate, half
  the FP16-accumulate rate - the tensor peak it can reach is twice the listed one (``tensor_peak_scale``).
- ``eta_compute_format``: relative matmul throughput of a weight format in prefill (F16 = 1): dequantising
  tiles costs ALU work, quantized kernels may use INT8 tensor cores. CPU engines key it by kernel path (repack,
  llamafile, vec_dot, float, float16, iqk: ``engines.cpu_kernels``), the share of that path's units' peak; the
  path depends on the build (``build_month``, from the asked ``engine_version``; "" = today's build).
- ``eta_expert_format`` / ``eta_expert_compute``: a routed expert's grouped GEMM against a dense GEMM of the same
  format (weight stream / math), by format group; 1 where not listed (a server engine's fitted kernel paths set
  them: ``serving.kernel_efficiency``).
- ``eta_matvec`` / ``gemm_half_tokens``: matmul efficiency by tokens in the pass. Up to
  ``MATVEC_MAX_TOKENS`` tokens (decode, small batches) engines run matrix-vector kernels (dequantise and
  dot on the SIMD ALUs) at ``eta_matvec`` of the matmul efficiency; above, tiled GEMMs whose efficiency
  ramps as ``T / (T + gemm_half_tokens)`` (a 32-token batch cannot fill the machine as a 512-token
  prefill chunk does).
- ``int8_matvec``: by format group (CPU engines: by ``cpu_kernels.matvec_key``), the fraction of a CPU's int8
  dot-product rate (``Hardware.cpu_int8_ops``; ``cpu_kernels.matvec_peak``)
  the engine's kernels reach on one token over quantized weights (llama.cpp's CPU backend quantizes the
  token's activations to 8 bits and takes an integer dot product per weight row). The per-weight-block work
  is shared by the pass's tokens that use the block (all T, or a routed expert's pairs), the multiply-adds
  are not: rate T / (a + b T), from one token's rate to the GEMM rate (``rates.int8_bound``). Empty for
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

from dataclasses import dataclass, field, replace
from functools import lru_cache

from ..errors import UserError, did_you_mean
from ..quant.format_key import format_key
from .bands import with_band
from .compat import backend_for, engine_defaults, engine_key, engine_names, runtime_of, sliding_window_spec
from .cpu import barrier_scale
from .cpu_kernels import build_month_of
from .driver import driver_fitted, resolve
from .era_builds import at_build
from .eras import era_family, flash_attention_available, flash_attention_since, parse_version
from .kernel_cost import driver_fixed_s, driver_launch_s
from .memory import memory_class
from .pooling import pooled
from .rates import compute_class
from .tables import _tables, engine_entry, load_table, with_shared_kernels

ENGINES = engine_names()  # the capability table's engines (capabilities.toml): ideal, llama.cpp + backends, ...


# `tokspeed measure --calibrate` stores its fit's RMS relative error; the band it gives a prediction is
# two of those in percent (x 100 for percent, x 2 for a two-sigma band: ~95 % of points of a normal spread)
CALIBRATION_BAND_SIGMAS = 2.0
CALIBRATION_MIN_BAND_PCT = 5.0   # floor: a handful of points on one machine never justifies less


@dataclass(frozen=True)
class EngineProfile:
    name: str
    version: str = ""                                                    # era label ("" = unversioned)
    eta_mem: dict = field(default_factory=lambda: {"default": 1.0})      # by memory class, else kind
    eta_compute: dict = field(default_factory=lambda: {"default": 1.0})  # by hardware kind
    eta_format: dict = field(default_factory=dict)                       # by format group
    eta_compute_format: dict = field(default_factory=dict)               # by format group (prefill)
    eta_expert_format: dict = field(default_factory=dict)     # routed experts' weight stream, x eta_format, by group
    eta_expert_compute: dict = field(default_factory=dict)    # routed experts' math, x eta_compute_format, by group
    eta_attn: float = 1.0
    eta_kv: float = 1.0
    bw_cap_gbps: float = 0.0
    quant_flops_per_core_cycle: float = 0.0   # prefill over quantized weights: cores x clock x this (0 = none)
    mmq_dp4a: bool = False       # quantized tiled matmuls as DP4A int8 dot products on parts without tensor cores
    pj_per_flop: float = 0.0     # tiled passes: FLOP/s <= board power (tdp_w) / this energy per FLOP (0 = none)
    expert_pairs_below_tokens: int = 0   # MoE: below this many tokens per pass each (token, expert) pair re-reads
    expert_gemv_per_token: bool = False  # MoE: experts one token at a time (ggml-cpu mul_mat_id: priors [CPUMOE])
    expert_loop_kernels: float = 0.0     # MoE: launches per touched expert of a host loop (moe_dispatch)
    expert_loop: str = ""                # when that loop runs: "multi-token" (ggml-sycl) | "float-no-mmf" (ggml-cuda)
    copies_weights_for_gemm: bool = False    # weights copied to memory before the GEMM (weight_copy.py)
    expert_tile: str = ""                # routed experts' GEMM tiles: "own" | "mmq" | "vulkan" (engines/expert_tiles)
    bytes_per_core_cycle: float = 0.0    # kernel bound: cores x clock x this (tokspeed.engines.issue; 0 = none)
    fp16_accumulate: bool = False
    eta_matvec: float = 1.0
    int8_matvec: dict = field(default_factory=dict)   # by format group: fraction of the CPU's int8 dot rate
    attn_bytes_per_flop: float = 0.0
    kv_reread: float = 0.0      # unfused attention: share of the per-query-head K/V re-reads reaching memory
    gemm_half_tokens: float = 0.0
    launch_s: float = 0.0
    launch_by_driver: dict = field(default_factory=dict)    # per GPU driver, fitted (kernel_cost.driver_launch_s)
    attn_decode_by_driver: dict = field(default_factory=dict)   # per Vulkan driver: decode FA's eta (fa_decode)
    kernel_shares: tuple = ()           # server engines: ((ledger role, share of its kernels launched), ...) (graph_kernels)
    sync_s_per_thread: float = 0.0      # CPU engines: barrier after each graph node, per thread (x cpu_threads)
    fixed_s: float = 0.0
    runtime_overhead_gib: float = 0.0
    decode_error_pct: float = 0.0     # typical |error| (p90 of the fit, or the prior's band)
    prefill_error_pct: float = 0.0
    fitted: bool = False
    source: str = ""
    runtime: str = ""                 # code underneath: "llama.cpp" for every llama.cpp backend, ollama, lm-studio
    flash_attention: bool | None = None   # attention fused or not, where the engine has the choice (llama.cpp)
    # the GPU driver the backend runs under on the device (engines/driver.py; "" = no driver choice) and why it was
    # assumed (None: named); whether the fit has rows under it is ``driver_fitted``
    driver: str = ""
    driver_assumed: str | None = None
    build_month: str = ""         # the build's year-month where one was asked ("" = today's): CPU kernel paths
    arch_rows: int = -1           # rows of the device's architecture family in the fit (engines/pooling.py; -1: none
                                  # counted -- no device, or a fit written without them)

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

    def with_barrier(self, hw) -> "EngineProfile":
        """This profile on ``hw``'s threads: a CPU engine's per-node barrier (``sync_s_per_thread`` x the
        device's ``cpu_threads`` x ``cpu.barrier_scale``: more across CCDs) joins ``launch_s``; unchanged for other
        engines or an unknown thread count."""
        threads = getattr(hw, "cpu_threads", 0)
        if not (self.sync_s_per_thread and threads):
            return self
        return replace(self, launch_s=self.launch_s + threads * self.sync_s_per_thread * barrier_scale(hw))

    @property
    def driver_fitted(self) -> bool:
        """Whether this engine's fit has scored rows run under its ``driver`` (True where there is no driver choice):
        an unfitted driver sets the kernel path (units) only, and the band says so (``engines/bands.py``): bands.toml's
        ``drivers`` lists, written by the fit (``driver.fitted_drivers``)."""
        return driver_fitted(self.name, self.driver)

    def format_eff(self, quant: str) -> float:
        """eta_format of a weight format's kernel group (1 where not listed)."""
        return self.eta_format.get(format_key(quant).group, 1.0)

    def expert_factors(self, quant) -> tuple[float, float]:
        """(weight stream, math) of a routed expert's GEMM relative to a dense one of format ``quant``."""
        if not (self.eta_expert_format or self.eta_expert_compute) or not quant:
            return 1.0, 1.0
        g = format_key(quant).group
        return self.eta_expert_format.get(g, 1.0), self.eta_expert_compute.get(g, 1.0)

    def compute_format_eff(self, quant: str) -> float:
        """eta_compute_format of a weight format's kernel group (1 where not listed)."""
        return self.eta_compute_format.get(format_key(quant).group, 1.0)

    @property
    def is_ideal(self) -> bool:
        return self.name == "ideal"


IDEAL = EngineProfile("ideal", source="roofline bound: eta = 1, no overhead (the seeds' formula)")


@lru_cache(maxsize=64)       # a file read per call otherwise; the profile is frozen and its dicts never mutated
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
    with BW the probe's read bandwidth (stored as ``eta_mem``; ``eta_memory``, its older name, is read too); it
    replaces eta_mem, eta_kv and fixed_s (launches are inside overhead_s) and its own fit error becomes the error
    band. A calibration ``attention_net`` counted, as KV bytes, the attention traffic its run's engine model adds
    beyond one read of the cache (re-reads, unfused scores: ``measure.predicted``): its eta_kv holds for either
    attention, the profile keeps its re-reads, scores and attention rate (``attention_compute_net``: fitted net)."""
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
        raise UserError(f"unknown engine {engine!r}", did_you_mean(e, ENGINES) or "choose one of " + ", ".join(ENGINES), field="engine")
    if e == "llama.cpp" and hardware is not None:
        e = resolve_backend(e, hardware)
    if flash_attention is not None:
        version = check_flash_attention(e, version, flash_attention)
    if e in LAYERED_ON_LLAMA_CPP:
        return layered_profile(e, hardware, version, flash_attention)
    if e == "ideal":
        parse_version(e, version)          # raises for a version: the bound has none
        return IDEAL
    if e not in _tables():
        e = "llama.cpp-cuda" if e == "llama.cpp" else e
    version = parse_version(e, version)    # the version parsed once: its era label rides along
    entry, label = engine_entry(e, version, flash_attention)
    if label:       # say which era the answer is for (the text output prints the engine's source)
        entry["source"] = (f"{era_family(e)} era {label}"
                           + (" (the newest fitted era: no engine_version was given)" if version is None else "")
                           + (f", FlashAttention {'on' if flash_attention else 'off'}" if flash_attention is not None
                              else "")
                           + f"; {entry.get('source', '')}")
    profile = EngineProfile(name=e, version=label, build_month=build_month_of(version), **entry)
    if hardware is None:
        return profile
    # a family with few or no rows in the fit answers nearer to (or at) the priors; a build's costs (era_builds)
    profile = at_build(pooled(profile, prior_profile(e), _tables()[e], hardware), hardware)
    return calibrated(with_band(with_driver(profile, hardware), hardware), hardware)


def with_driver(profile: EngineProfile, hardware) -> EngineProfile:
    """``profile`` saying which GPU driver its backend runs under on ``hardware`` (``driver.resolve``: named, else
    the OS default and why), with its per-kernel and per-step costs (``driver_launch_s``, ``driver_fixed_s``).
    The driver's features act on the device view (``backends.backend_view``), not here."""
    d = resolve(profile.name, hardware)
    if d is None:
        return profile
    return replace(profile, driver=d.name, driver_assumed=d.assumed, launch_s=driver_launch_s(profile, hardware),
                   fixed_s=driver_fixed_s(profile, hardware))


def check_engine_build(engine: str, engine_version=None, flash_attention: bool | None = None) -> None:
    """UserError for a build or -fa ``engine`` cannot take, before any device is tried (``plan``)."""
    if flash_attention is not None:
        check_flash_attention(engine, engine_version, flash_attention)
    else:
        parse_version(engine, engine_version)


def check_flash_attention(engine: str, version, on):
    """UserError unless ``engine`` lets its user choose FlashAttention (llama.cpp, its backends and front ends:
    ``-fa on|off``) and, for ``on``, its build has the kernels (``eras.flash_attention_available``: a backend's own
    month where later, ggml-sycl's) and its backend at all (capabilities.toml); else ``version`` parsed."""
    if not isinstance(on, bool):
        raise UserError(f"flash_attention must be True, False or None, not {on!r}")
    if runtime_of(engine) != "llama.cpp":
        what = ("the ideal bound reads the KV cache once and has no kernels" if engine == "ideal"
                else f"{engine} runs its own attention kernels")
        raise UserError(f"FlashAttention on or off is a llama.cpp setting (-fa); {what}",
                        "drop `flash_attention`, or use `engine` llama.cpp, ollama, lm-studio", field="flash_attention")
    version = parse_version(engine, version)     # a malformed or too early version says so first
    if on and version is not None and not flash_attention_available(engine, version):
        raise UserError(f"{engine} {version.text} has no FlashAttention (its -fa kernels arrived in "
                        f"{flash_attention_since(engine)} builds)",
                        "set `flash_attention` off, or use a later `engine_version`", field="flash_attention")
    if on and engine.startswith("llama.cpp-") and not engine_defaults(engine).get("flash_attention", False):
        raise UserError(f"{engine} is assumed to have no FlashAttention kernel (capabilities.toml): -fa on would "
                        "run its attention elsewhere", "set `flash_attention` off", field="flash_attention")
    return version
