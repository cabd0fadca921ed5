"""Routed experts' prompt GEMM tiles (tokspeed/engines/expert_tiles.py), against values worked out by hand from the
kernels' tile choice (ggml-cuda mmq.cuh mul_mat_q_switch_J, ggml-vulkan matmul_id_tile_selector) and the binomial
count of the tokens each expert gets."""

import math
from dataclasses import replace

from tokspeed.engines.expert_tiles import best_tile, expected_tiles, fill, route_share, tile_columns
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import matmul_eff
from tokspeed.hardware.catalog import get_hardware

RTX_4090, R9700, MI50 = get_hardware("rtx-4090"), get_hardware("radeon-ai-pro-r9700"), get_hardware("mi50")


def _binomial_tiles(t, p, j):
    """E[ceil(n / j) | n >= 1], n ~ Binomial(t, p), summed term by term with exact binomial coefficients."""
    pmf = [math.comb(t, n) * p ** n * (1 - p) ** (t - n) for n in range(t + 1)]
    return sum(math.ceil(n / j) * pmf[n] for n in range(1, t + 1)) / (1 - pmf[0])


def test_the_kernel_picks_the_first_tile_width_with_the_fewest_tiles():
    assert best_tile(512, 128) == 128         # 4 tiles of 128: no J <= 128 gives fewer
    assert best_tile(32, 128) == 32           # one tile from J = 32 on
    assert best_tile(20, 128) == 24           # J steps by 8: 24 is the first single tile
    assert best_tile(200, 128) == 104         # 2 tiles; J = 96 gives 3 (ceil(200 / 96)), 104 the first with 2
    assert best_tile(512, 64) == 64           # DP4A parts: at most 64 columns


def test_expected_tiles_per_touched_expert_by_hand():
    # n in {0, 1, 2} with 1/4, 1/2, 1/4; given n >= 1: ceil(n / 1) is 1 (2/3) or 2 (1/3)
    assert math.isclose(expected_tiles(2, 0.5, 1), (0.5 * 1 + 0.25 * 2) / 0.75)
    assert math.isclose(expected_tiles(2, 0.5, 2), 1.0)
    assert math.isclose(expected_tiles(512, 1 / 16, 32), _binomial_tiles(512, 1 / 16, 32), rel_tol=1e-9)
    assert math.isclose(expected_tiles(300, 0.3, 64), _binomial_tiles(300, 0.3, 64), rel_tol=1e-9)
    assert expected_tiles(100, 1.0, 32) == 4.0          # every token to the expert: ceil(100 / 32)


def test_route_share_inverts_the_ledgers_pairs_per_expert():
    p = 8 / 128                                          # top-8 of 128 experts
    ppe = 512 * p / (1 - (1 - p) ** 512)                 # ledger.forward_ops: pairs / experts touched
    assert math.isclose(route_share(512, ppe), p, rel_tol=1e-9)
    p = 2 / 64
    ppe = 16 * p / (1 - (1 - p) ** 16)                   # a small pass: fewer than half the experts touched
    assert math.isclose(route_share(16, ppe), p, rel_tol=1e-9)


def test_cuda_runs_every_expert_in_tiles_of_the_pass_from_the_mmq_id_kernel():
    eng = replace(get_engine("llama.cpp-cuda"), gemm_half_tokens=32.0, build_month="2025-08")
    p = 4 / 32                                           # gpt-oss-20b: top-4 of 32 experts, 512 tokens: 64 each
    ppe = 512 * p / (1 - (1 - p) ** 512)
    assert tile_columns(eng, RTX_4090, "MXFP4", 512, ppe) == 128
    share = ppe / (_binomial_tiles(512, p, 128) * 128)   # one tile each (n > 128 has odds below 1e-20): half full
    assert math.isclose(share, 0.5, rel_tol=1e-6)
    assert math.isclose(matmul_eff(eng, 512, ppe, RTX_4090, "MXFP4"), 128 / 160 * share, rel_tol=1e-6)
    assert math.isclose(matmul_eff(eng, 512, 0.0, RTX_4090, "MXFP4"), 512 / 544)    # a dense matmul: unchanged
    # before the one-launch kernel: a host loop, one GEMM per expert over its own 64 tokens
    old = replace(eng, build_month="2025-04")
    assert tile_columns(old, RTX_4090, "MXFP4", 512, ppe) == 0
    assert math.isclose(matmul_eff(old, 512, ppe, RTX_4090, "MXFP4"), ppe / (ppe + 32))
    # float experts (MMF / the cuBLAS loop): a GEMM per expert
    assert tile_columns(eng, RTX_4090, "BF16", 512, ppe) == 0


def test_rdna_picks_the_tile_against_the_mean_in_current_builds():
    p = 8 / 128
    ppe = 512 * p / (1 - (1 - p) ** 512)                 # 32.0
    rocm = replace(get_engine("llama.cpp-rocm"), gemm_half_tokens=32.0)
    assert tile_columns(replace(rocm, build_month="2025-12"), R9700, "Q4_K_M", 512, ppe) == 128   # the pass's tokens
    assert tile_columns(rocm, R9700, "Q4_K_M", 512, ppe) == 32                                     # today's: the mean
    expect = 32 / 64 * ppe / (_binomial_tiles(512, p, 32) * 32)        # experts past 32 tokens take a second tile
    assert math.isclose(matmul_eff(rocm, 512, ppe, R9700, "Q4_K_M"), expect, rel_tol=1e-6)
    assert 0.65 < ppe / (_binomial_tiles(512, p, 32) * 32) < 0.72
    # gfx906 (no WMMA / MFMA: DP4A MMQ) keeps tiles of the pass, at most 64 columns
    assert tile_columns(rocm, MI50, "Q4_K_M", 512, ppe) == 64


def test_vulkan_guesses_the_tile_from_tokens_per_expert():
    vk = get_engine("llama.cpp-vulkan")
    assert [tile_columns(vk, R9700, "Q4_K_M", 512, n) for n in (10.0, 32.0, 32.5, 64.0, 100.0)] == [32, 32, 64, 64, 128]
    # NVIDIA's driver has coopmat2: the small and medium quantized mul_mat_id tiles are both 64 columns
    assert [tile_columns(vk, RTX_4090, "Q4_K_M", 512, n) for n in (10.0, 32.0, 64.0, 100.0)] == [64, 64, 64, 128]


def test_fill_is_a_share():
    for t, ppe, j in ((512, 32.0, 32), (512, 64.0, 128), (2048, 16.0, 128), (16, 1.2, 16)):
        assert 0.0 < fill(t, ppe, j) <= 1.0



def test_explain_says_how_full_the_expert_tiles_are():
    from tokspeed.explain import explain

    # gpt-oss-20b: 32 experts, top-4; a 512-token pass gives each 512 x 4 / 32 = 64 tokens, in 128-column tiles
    j = explain("gpt-oss-20b", "rtx-4090", prefill=512, engine="llama.cpp-cuda", with_levers=False).journey
    note = next(s.note for s in j.stages if s.key == "experts")
    assert "tiles of 128 token columns" in note and "64 tokens an expert fill 50%" in note
    dense = explain("llama-3.1-8b", "rtx-4090", prefill=512, engine="llama.cpp-cuda", with_levers=False).journey
    assert not any("tiles of" in (s.note or "") for s in dense.stages)


def test_extreme_passes_stay_finite_and_quick():
    # a million-token pass over two experts of four: n ~ 500,000 +- 500, spread evenly over the 128 residues, so
    # E[ceil(n / 128)] = E[n] / 128 + 127 / 256
    assert math.isclose(expected_tiles(10 ** 6, 0.5, 128), 500_000 / 128 + 127 / 256, rel_tol=1e-6)
    # many experts, few tokens: pairs per expert barely above 1 (k / E of 1e-10) leaves one token a tile
    p = route_share(512, 1 + 1e-7)
    assert 0.0 < p < 1e-6
    assert math.isclose(fill(512, 1 + 1e-7, 16), 1 / 16, rel_tol=1e-6)
    assert expected_tiles(512, 0.0, 16) == 1.0


def test_vulkan_bf16_experts_take_the_tiles_at_one_token():
    # ggml_vk_use_mul_mat_vec_id: F32, F16 and quantized experts only -> BF16 experts of a decode step run the
    # mul_mat_id tiles: the small tile (32 columns) holds the expert's one token: 32 / (32 + gemm_half) x 1 / 32
    vk = get_engine("llama.cpp-vulkan")
    half = vk.gemm_half_tokens
    assert math.isclose(matmul_eff(vk, 1, 1.0, R9700, "BF16"), 32 / (32 + half) / 32)
    assert matmul_eff(vk, 1, 1.0, R9700, "Q4_K_M") == vk.eta_matvec           # quantized: mul_mat_vec_id
    assert matmul_eff(vk, 1, 1.0, R9700, "F16") == vk.eta_matvec              # F16: mul_mat_vec_id
    assert matmul_eff(vk, 1, 0.0, R9700, "BF16") == vk.eta_matvec             # a dense BF16 matrix: mul_mat_vec
    # ROCm and CUDA run BF16 experts of one token through their matrix-vector kernels
    for name in ("llama.cpp-rocm", "llama.cpp-cuda"):
        eng = get_engine(name)
        assert matmul_eff(eng, 1, 1.0, R9700, "BF16") == eng.eta_matvec


def test_explain_says_a_decode_steps_bf16_experts_run_in_tiles():
    from tokspeed.explain import explain

    # Qwen3-Coder-30B-A3B BF16 on the R9700 under Vulkan: each of the 8 experts a token picks has one token in a
    # 32-column tile: 1 / 32 = 3 % of its columns
    j = explain("qwen3-coder-30b-a3b", "radeon-ai-pro-r9700", quant="BF16", engine="llama.cpp-vulkan",
                with_levers=False).journey
    note = next(s.note for s in j.stages if s.key == "experts")
    assert "tiles of 32 token columns" in note and "1 tokens an expert fill 3%" in note
    q4 = explain("qwen3-coder-30b-a3b", "radeon-ai-pro-r9700", quant="Q4_K_M", engine="llama.cpp-vulkan",
                 with_levers=False).journey
    assert "tiles of" not in (next(s.note for s in q4.stages if s.key == "experts") or "")
