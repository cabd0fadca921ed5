"""How a routed expert's prompt GEMM fills its tiles: the columns (tokens) a tile is sized for, against the tokens
each expert actually gets.

A prompt pass of T tokens routes each to k of E experts; an expert gets n ~ Binomial(T, k / E) of them (uniform
routing: the physics prior; a trained router's imbalance only adds tiles). How llama.cpp multiplies them depends on
the engine's kernels (``EngineProfile.expert_tile``):

- ``own``: one GEMM per expert over its own rows (ggml-sycl's per-expert loop; ggml-cuda's host loop of
  ``ggml_cuda_mul_mat_id`` before ``MMQ_ID_SINCE``, and for float experts): the GEMM is sized for its n tokens and
  ramps over them, n / (n + ``gemm_half_tokens``) (``rates.matmul_eff``).
- ``mmq``: ggml-cuda's MMQ kernel with expert ids (mmq.cu ``ggml_cuda_mul_mat_id``, one launch for every expert
  from ``MMQ_ID_SINCE``; also the HIP build): one tile width J for every expert, chosen in
  ``mul_mat_q_switch_J`` (mmq.cuh) as the J (a multiple of 8 up to ``MMQ_X_MAX``) with the fewest tiles over
  ``ncols_opt`` columns: the pass's T tokens, so J = 128 from a pass of 128 tokens, while each expert has T k / E of
  them; on RDNA3 / RDNA4 from ``RDNA_MEAN_TILE_SINCE`` the mean T k / E instead. Each expert runs ceil(n / J) tiles
  of J columns and the tile's MMA covers all J (the grid's columns past the expert's n exit, the last tile's rows
  past n are computed and dropped).
- ``vulkan``: ggml-vulkan's ``mul_mat_id`` shaders (``ggml_vk_mul_mat_id_q_f16``): the tile guessed for
  ``n_per_expert`` = ceil(T k / E) by ``matmul_id_tile_selector`` (ggml-vulkan.cpp): the small tile (32 columns)
  to 32, the medium (64) to 64, else the large (128); under coopmat2 (NVIDIA's driver) the small and medium
  quantized ``mul_mat_id`` tiles are both 64 columns wide (``s_mmqid_wg_denoms``, ``m_mmqid_wg_denoms``), so 64 up
  to 64 and 128 beyond; ceil(n / J) tiles per expert as above.
- ``""``: the GEMM ramps over the pass's tokens (Metal; an engine without routed-expert kernels of its own).

A tile costs its weight tile's loading and unpacking (a) and its J columns of multiply-adds (b J): its efficiency
is J / (J + ``gemm_half_tokens``), the tiled GEMMs' ramp at the tile's width, times the share of its columns that
are tokens, the fill: E[n] / (E[ceil(n / J)] J) over the experts touched (``fill``). Not modelled: each tile also
re-reads its weight slice (ceil(n / J) reads of the expert's weights: a memory-side cost beside the compute).
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..quant.format_key import format_key
from .cpu_kernels import before
from .driver import driver_family, features, resolve
from .mmq import mmq_unit

# mmq.cuh get_mmq_x_max_host: 128 columns on Turing+ tensor cores and AMD WMMA / MFMA, 64 with DP4A (Pascal, GCN)
MMQ_X_MAX = {"mma": 128, "dp4a": 64}
MMQ_X_STEP = 8                      # mul_mat_q_switch_J: J = 8, 16, ..., MMQ_X_MAX
VULKAN_ID_TILES = (32, 64, 128)     # ggml-vulkan s / m / l mul_mat_id tiles' columns (s/m/l_mmqid_wg_denoms[1])
VULKAN_ID_TILES_CM2 = (64, 64, 128)  # ... under coopmat2: s and m quantized mul_mat_id tiles are 64 columns wide
# ggml-cuda mul_mat_id as one MMQ launch over every expert (expert bounds, ids on the device): in llama-cpp-python
# 0.3.16's copy (PyPI 2025-08-15), the first copy seen (ASSUMED: it may have landed earlier); before it, a host loop
# of one GEMM per expert over its own rows
MMQ_ID_SINCE = "2025-08"
# ggml-cuda mmq.cu: "On RDNA3 and RDNA4 it is faster to pick the tile size against" T k / E (``ncols_opt``): absent
# from 0.3.24's copy, present in 0.3.36's, whose sources mention dates up to 2026-06 (ASSUMED: that month)
RDNA_MEAN_TILE_SINCE = "2026-06"
RDNA = ("rdna3", "rdna3.5", "rdna4")
SPREAD_SDS = 12.0                   # the binomial's tails past 12 sd (+ 2) are left out: < 1e-10 even at a mean of 1


def tile_columns(engine, hw, fmt, tokens: int, pairs_per_expert: float) -> int:
    """The columns J of the tiles ``engine`` multiplies a routed expert's ``fmt`` weights in, in a pass of ``tokens``
    tokens giving each touched expert ``pairs_per_expert`` on average; 0 where each expert's GEMM is sized for its
    own tokens (``own``) and -1 where the GEMM ramps over the pass's tokens (no expert kernel of its own)."""
    kind = getattr(engine, "expert_tile", "")
    if not kind:
        return -1
    if kind == "vulkan":
        mean, widths = per_expert(pairs_per_expert), vulkan_id_tiles(engine, hw)
        return next((j for j in widths if mean <= j), widths[-1])
    if kind != "mmq" or hw is None or before(getattr(engine, "build_month", ""), MMQ_ID_SINCE):
        return 0
    unit = mmq_unit(hw, tokens) if format_key(fmt).quantized else ""
    if unit not in MMQ_X_MAX:        # float experts (MMF / the cuBLAS loop) or no MMQ there: a GEMM per expert
        return 0
    mean_tile = str(hw.arch or "") in RDNA and not before(getattr(engine, "build_month", ""), RDNA_MEAN_TILE_SINCE)
    return best_tile(per_expert(pairs_per_expert) if mean_tile else tokens, MMQ_X_MAX[unit])


def vulkan_id_tiles(engine, hw) -> tuple:
    """The s / m / l ``mul_mat_id`` tile widths of ggml-vulkan on ``hw`` under its driver: coopmat2's where the driver
    has it on the part's family (``driver.features``), else the other paths'."""
    f = features(resolve(engine.name, hw), driver_family(hw)) if hw is not None else None
    return VULKAN_ID_TILES_CM2 if f is not None and f.coopmat2 else VULKAN_ID_TILES


def per_expert(pairs_per_expert: float) -> int:
    """The kernels' integer tokens per expert, ceil(T k / E) (``pairs_per_expert`` up to rounding: 1e-6)."""
    return math.ceil(pairs_per_expert - 1e-6)


def best_tile(columns: int, j_max: int) -> int:
    """``mul_mat_q_switch_J``: the first J (multiples of ``MMQ_X_STEP`` up to ``j_max``) with the fewest tiles over
    ``columns`` columns."""
    columns = max(int(columns), 1)
    tiles = math.ceil(columns / j_max)
    return min(j_max, MMQ_X_STEP * math.ceil(math.ceil(columns / tiles) / MMQ_X_STEP))


def route_share(tokens: int, pairs_per_expert: float) -> float:
    """p = k / E of a pass of ``tokens`` tokens whose touched experts get ``pairs_per_expert`` each on average:
    pairs_per_expert = T p / (1 - (1 - p)^T), solved for p (bisection; it rises with p)."""
    t = max(int(tokens), 1)
    if pairs_per_expert >= t:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        p = (lo + hi) / 2
        if t * p / _touched(t, p) < pairs_per_expert:
            lo = p
        else:
            hi = p
    return (lo + hi) / 2


def _touched(t: int, p: float) -> float:
    """P(n >= 1) = 1 - (1 - p)^t, exact for small p (-expm1(t log1p(-p)): no 1 - 1 = 0)."""
    return -math.expm1(t * math.log1p(-p)) if p < 1.0 else 1.0


@lru_cache(maxsize=256)
def expected_tiles(tokens: int, p: float, j: int) -> float:
    """E[ceil(n / J) | n >= 1] for n ~ Binomial(``tokens``, ``p``), summed over the n within ``SPREAD_SDS`` standard
    deviations of the mean (one pass: as many terms as that span, whatever ``tokens``)."""
    t = max(int(tokens), 1)
    if p >= 1.0:
        return float(math.ceil(t / j))
    if p <= 0.0:                    # every touched expert has one token
        return 1.0
    mean, sd = t * p, math.sqrt(t * p * (1 - p))
    lo, hi = max(1, int(mean - SPREAD_SDS * sd) - 1), min(t, int(mean + SPREAD_SDS * sd) + 2)
    base, lp, lq = math.lgamma(t + 1), math.log(p), math.log1p(-p)
    total = sum(math.exp(base - math.lgamma(n + 1) - math.lgamma(t - n + 1) + n * lp + (t - n) * lq) * math.ceil(n / j)
                for n in range(lo, hi + 1))
    return total / _touched(t, p)


def fill(tokens: int, pairs_per_expert: float, j: int) -> float:
    """The share of a routed expert's tile columns that are tokens: E[n] / (E[ceil(n / J)] J) over touched experts."""
    p = route_share(tokens, pairs_per_expert)
    return min(1.0, pairs_per_expert / (expected_tiles(int(tokens), round(p, 12), j) * j))
