"""How fast ggml-vulkan's FlashAttention runs a decode pass's attention core, under a driver without coopmat2.

A decode pass (up to ``MATVEC_MAX_TOKENS`` query rows) runs ``ggml_vk_flash_attn`` (ggml-vulkan.cpp, llama-cpp-python
0.3.36's vendored copy) as one workgroup per K/V head -- its query heads packed as ``gqa_ratio`` rows, N <= 8 -- and
per ``split_k`` slice of the cache, ``split_k`` sized so that about two workgroups run per shader core. Each walks
its slice in blocks of ``Bc`` keys: load K, score its few rows, update the running softmax, load V, update the
values, with a barrier between (``flash_attn.comp``): FA_SCALAR where N == 1 or the part has no coopmat1
FlashAttention, else coopmat1 16-row tiles, at most half full at N <= 8 (Intel Xe2: the ``xe_fa_opt`` split-K
shaders); under NVIDIA's coopmat2 driver the coopmat2 tiles on the tensor cores. Off coopmat2 such a kernel is bound
by the latency of its block loop, not by the matrix units: the calibration rows at depth measure it at a few per
cent of the part's vector rate (the time a token gains from depth 0 to the deep row over the attention core's
FLOPs there, ``ledger.attention_core_ops``):

    Radeon AI PRO R9700, RADV (2025-12): gpt-oss-20b / 120b 1.48 / 1.44, qwen3-coder-30b-a3b 1.64-2.09,
        nemotron-3-nano 1.44, qwen3-next-80b 1.86 TFLOP/s (query heads per K/V head 8-16); gemma-3-27b 0.72-0.78
        (2 per K/V head), gemma-3-12b 0.27 (256-wide heads) -- against 95.6 TFLOP/s of packed FP16 and 10 TFLOP/s
        the matrix units' rate gave;
    Arc Pro B70, Mesa ANV (2026-05): 0.21-0.48 TFLOP/s over seven models (39.3 of packed FP16; 8.3 given): the
        Intel branch of ``get_fa_tuning_params_scalar`` also disables subgroups (reductions through shared memory);
    RTX 4080, NVIDIA's coopmat1-only driver (2025-07): 2.55-2.86 TFLOP/s at 8-15K (there the cache's bytes bound
        it: within 10 % of its stream).

So off coopmat2 a Vulkan decode pass's attention core is timed on the vector ALUs (the packed-FP16 figure, as a
prompt's FA_SCALAR tiles: ``rates.compute_rate``) at eta_compute x eta_attn x the driver's own efficiency: fitted
where the newest era has decode rows at ``DEPTH_ROWS_MIN`` cached tokens or more under it (``attn_decode_by_driver``;
``fit_drivers``), else ``eta_matvec``, the prior every matrix-vector kernel of the backend has. Its query heads'
FLOPs stand for the kernel's work: the rows of one model family agree within a factor 2, the 2-per-K/V-head and
256-wide rows are the slow side (ASSUMED: no term for either; they stay in the fit and its band).
"""

from __future__ import annotations

from functools import lru_cache

from .driver import api_of, driver_family, features, resolve

DEPTH_ROWS_MIN = 4096       # a decode row this deep informs its driver's factor (the attention core a share of it)


@lru_cache(maxsize=512)
def decode_attn_driver(backend: str, hw) -> str:
    """The driver whose FlashAttention block loop times ``backend``'s decode attention on ``hw`` (module
    docstring): a Vulkan driver without coopmat2 on the part; "" on any other backend, under coopmat2 or unknown."""
    if api_of(backend) != "vulkan":
        return ""
    d = resolve(backend, hw)
    f = features(d, driver_family(hw)) if d is not None else None
    return d.name if f is not None and not f.coopmat2 else ""


def decode_attn_factor(engine, hw) -> tuple[str, float]:
    """(driver, efficiency) of ``engine``'s decode attention on ``hw`` under that driver: the fitted
    ``attn_decode_by_driver`` value, else ``eta_matvec``; ("", eta_matvec) where ``decode_attn_driver`` is ""."""
    d = decode_attn_driver(engine.name, hw)
    own = getattr(engine, "attn_decode_by_driver", None) or {}
    return d, float(own.get(d, engine.eta_matvec)) if d else engine.eta_matvec


def fit_drivers(engine: str, rows) -> list[str]:
    """The drivers whose decode attention efficiency the fit takes apart: those of ``engine``'s decode ``rows``
    with at least ``DEPTH_ROWS_MIN`` cached tokens where ``decode_attn_driver`` names one."""
    return sorted({d for r in rows if r.kind == "decode" and r.context >= DEPTH_ROWS_MIN
                   for d in [decode_attn_driver(engine, r.hw)] if d})
