"""How often a prompt's FlashAttention reads the K/V cache: once per block of query rows on ggml-vulkan's FA_SCALAR.

ggml-vulkan's scalar FlashAttention (``flash_attn.comp``, chosen by ``get_fa_tuning_params`` where the driver has no
coopmat2 and the part no coopmat1 FlashAttention: ``backends.flash_attn_on_vector``, or no cooperative matrices at
all) runs one workgroup per block of ``Br`` query rows of one query head; each workgroup streams every key and value
its rows attend from the cache (a prompt's query heads are not packed by their K/V head: that packing,
``ggml_vk_flash_attn``'s ``gqa_ratio``, is for N <= 8 rows). A pass therefore reads the K/V bytes its query rows
attend (``Op.kv_row_bytes``: per query row and query head) divided by ``Br``, where the fused kernels of the other
paths (coopmat1/2 tiles of 16-64 rows sharing a K/V head's tiles, CUDA's and Metal's) read the cache about once.
The device's caches are not credited: at the depths where the term matters a K/V head's cache slice (e.g. 8.9 MB at
17K tokens of a 128-wide F16 head) is of the order of the whole L2 (ASSUMED; an upper bound of the traffic).
Applied on Intel parts (``MEASURED_VENDORS``), where the rows below measure it and ggml-vulkan's Intel branch also
disables subgroups and always reduces the block; the other parts on FA_SCALAR (AMD RDNA2 with 32-128 MB of Infinity
Cache, GCN / CDNA, NVIDIA Turing under a coopmat1 driver) have last-level caches the catalog does not list and no
row at depth: there the cache is read once, as before this term.

``Br`` is ``get_fa_tuning_params_scalar`` of ggml-vulkan.cpp (llama-cpp-python 0.3.36's vendored copy):
- ``row_split``: 4 where the head is wider than ``row_split_max_hsk`` (64; 128 on AMD RDNA discrete parts for
  more than 8 rows), else 1 (and 1 below 4 rows);
- ``reduce_block_rows``: ``D & 8``, fewer than 1,024 cached keys, or an Intel part (always);
- ``block_rows``: row_split 1: 4 (up to 4 rows, or reduced) else 8; row_split 4: 8 (up to 8 rows, or reduced) else
  16. The halving where the shared memory would not hold a 16- or 8-row block is not modelled (a wider block
  than the kernel's: less traffic, the optimistic side).
Measured: on the Intel Arc Pro B70 (calibration-3.csv, Vulkan ANV, -fa 1) pp2048 at depth 16,384 runs 1.4-3.4x
slower than the cache read once predicts (llama-2-7b 242 vs 819 tok/s), and within -14..+33 % with the cache read
once per 8-row block (4 for gpt-oss-20b's 64-wide heads), the pass-at-depth-0 rows unchanged (their K/V is short).
"""

from __future__ import annotations

from functools import lru_cache

from .backends import flash_attn_on_vector, uses_matrix_units
from .driver import api_of, driver_family, features, resolve
from .rates import MATVEC_MAX_TOKENS

ROW_SPLIT_MAX_HSK = 64          # get_fa_tuning_params_scalar: row_split_max_hsk
ROW_SPLIT_MAX_HSK_RDNA = 128    # AMD, not GCN, not UMA, more than 8 rows
REDUCE_BELOW_KV = 1024          # reduce_block_rows below this many keys
GCN_FAMILIES = ("gcn", "cdna")  # ggml-vulkan's AMD_GCN: wave64-only parts (GCN and CDNA)
MEASURED_VENDORS = ("intel",)   # where the re-reads are applied (module docstring)


@lru_cache(maxsize=512)
def fa_scalar(backend: str, hw) -> bool:
    """Whether ``backend``'s prompt FlashAttention runs ggml-vulkan's FA_SCALAR shader on ``hw``: Vulkan without
    coopmat2, and either no coopmat1 FlashAttention on the part (``backends.flash_attn_on_vector``) or no cooperative
    matrices at all (the matmuls on the vector ALUs too); False where unknown."""
    if api_of(backend) != "vulkan":
        return False
    units = uses_matrix_units(backend, hw)
    if units is None:
        return False
    if units:
        return flash_attn_on_vector(backend, hw)
    f = features(resolve(backend, hw), driver_family(hw))
    return f is not None and not f.coopmat2


def block_rows(hw, head_dim: int, n_kv: float, n_rows: int) -> int:
    """``Br`` of ggml-vulkan's FA_SCALAR on ``hw`` for ``n_rows`` query rows of ``head_dim`` over ``n_kv`` keys
    (``get_fa_tuning_params_scalar``; module docstring)."""
    vendor = (getattr(hw, "vendor", "") or "").strip().lower()
    intel = vendor.startswith("intel")
    rdna = (vendor.startswith("amd") and driver_family(hw) not in GCN_FAMILIES and getattr(hw, "kind", "") != "soc")
    max_hsk = ROW_SPLIT_MAX_HSK_RDNA if rdna and n_rows > 8 else ROW_SPLIT_MAX_HSK
    row_split = 1 if (n_rows < 4 or head_dim <= max_hsk) else 4
    reduce = bool(head_dim & 8) or n_kv < REDUCE_BELOW_KV or intel
    if n_rows == 1:
        return 1
    if row_split == 1:
        return 2 if n_rows == 2 else (4 if (n_rows <= 4 or reduce) else 8)
    return 4 if n_rows <= 4 else (8 if (n_rows <= 8 or reduce) else 16)


def extra_kv_bytes(op, backend: str, hw, tokens: int) -> float:
    """K/V bytes a prompt pass's attention core ``op`` reads beyond one read of the cache (``op.kv_read_bytes``)
    under FA_SCALAR on a part of ``MEASURED_VENDORS``: ``op.kv_row_bytes / Br`` less the one read; 0 on every other
    path or part, for a decode pass (up to ``MATVEC_MAX_TOKENS`` rows: the matrix-vector kernels) and for an
    operator that is not the attention core."""
    if tokens <= MATVEC_MAX_TOKENS or not op.kv_row_bytes or not op.kv_write_bytes or not fa_scalar(backend, hw):
        return 0.0
    if not (getattr(hw, "vendor", "") or "").strip().lower().startswith(MEASURED_VENDORS):
        return 0.0
    n_kv = tokens * op.kv_read_bytes / op.kv_write_bytes       # keys of the last row: (cached + n) per sequence
    br = block_rows(hw, op.score_dim, n_kv, tokens)
    return max(0.0, op.kv_row_bytes / br - op.kv_read_bytes)
