"""ggml-vulkan's FA_SCALAR reads the K/V cache once per block of Br query rows (tokspeed/engines/fa_tiles.py):
the block shape from get_fa_tuning_params_scalar by hand, the ledger's per-row K/V bytes by hand, and the pass time
it adds on an Intel Arc Pro B70 (calibration-3.csv's Vulkan rows at depth 16,384)."""

from __future__ import annotations

import pytest

import tokspeed
from tokspeed.engines.fa_tiles import block_rows, extra_kv_bytes, fa_scalar
from tokspeed.engines.profile import get_engine
from tokspeed.explain.journey import build_journey
from tokspeed.hardware.catalog import get_hardware
from tokspeed.ledger import attention_core_ops
from tokspeed.resolve import resolve_model
from tokspeed.timing import PassRates

B70, RTX4090, RX6800XT, RTX2080TI = (get_hardware(h) for h in ("arc-pro-b70", "rtx-4090", "rx-6800-xt",
                                                                 "rtx-2080-ti"))


def test_which_parts_run_the_scalar_shader():
    # Xe2 has cooperative matrices but no 16x16x16 F32-accumulator shape: coopmat1 FlashAttention declined
    assert fa_scalar("llama.cpp-vulkan", B70)
    # NVIDIA Ada under the NVIDIA driver: coopmat2 FlashAttention; CUDA is not Vulkan
    assert not fa_scalar("llama.cpp-vulkan", RTX4090)
    assert not fa_scalar("llama.cpp-cuda", B70)
    # RDNA2: no cooperative matrices at all (its matmuls and FlashAttention on the vector ALUs)
    assert fa_scalar("llama.cpp-vulkan", RX6800XT)


@pytest.mark.parametrize("hw, head, n_kv, rows, br", [
    # Intel: reduce_block_rows always; 128-wide heads split rows 4 ways (> 64): 8; 64-wide: row_split 1: 4
    (B70, 128, 17408, 512, 8),
    (B70, 64, 17408, 512, 4),
    # NVIDIA (a Turing part, as the rule reads for any NVIDIA part): 128 > 64 -> row_split 4; 17K keys, D & 8 = 0 -> not reduced: 16; under 1,024 keys: 8
    (RTX2080TI, 128, 17408, 512, 16),
    (RTX2080TI, 128, 512, 512, 8),
    # AMD RDNA2, a discrete part, more than 8 rows: row_split_max_hsk 128 -> row_split 1 -> 8 (not reduced)
    (RX6800XT, 128, 17408, 512, 8),
    (RX6800XT, 256, 17408, 512, 16),
    # a head width with bit 3 set (D & 8: 72 = 64 + 8) reduces the block
    (RTX2080TI, 72, 17408, 512, 8),
])
def test_block_rows_as_ggml_vulkan_sets_them(hw, head, n_kv, rows, br):
    assert block_rows(hw, head, n_kv, rows) == br


def test_ledger_kv_row_bytes_by_hand():
    # llama-2-7b: 32 layers, 32 query heads = 32 K/V heads of 128; F16 cache. 512 prompt tokens after 16,384:
    # query i attends 16,384 + i + 1 keys -> 512 x 16,384 + 512 x 513 / 2 pairs per head
    spec = resolve_model("llama-2-7b")[0]
    (op,) = attention_core_ops(spec, 2.0, 1, 512, 16384)
    pairs = 512 * 16384 + 512 * 513 / 2
    assert op.kv_row_bytes == pytest.approx(32 * 32 * pairs * (128 + 128) * 2)
    assert op.score_dim == 128
    assert op.kv_read_bytes == pytest.approx(32 * (16384 + 512) * 32 * 256 * 2)


def test_b70_prompt_at_depth_pays_the_block_rereads():
    spec = resolve_model("llama-2-7b")[0]
    (op,) = attention_core_ops(spec, 2.0, 1, 512, 16384)
    # Br = 8 on Intel for 128-wide heads: the cache is read kv_row_bytes / 8, one read of it already counted
    extra = extra_kv_bytes(op, "llama.cpp-vulkan", B70, 512)
    assert extra == pytest.approx(op.kv_row_bytes / 8 - op.kv_read_bytes)
    assert extra / op.kv_read_bytes == pytest.approx((16384 + 256.5) / (16384 + 512) * 512 / 8 - 1, rel=1e-9)
    # no re-reads for a decode pass, on a coopmat2 part, or for CUDA
    assert extra_kv_bytes(op, "llama.cpp-vulkan", B70, 8) == 0.0
    assert extra_kv_bytes(op, "llama.cpp-vulkan", RTX4090, 512) == 0.0
    assert extra_kv_bytes(op, "llama.cpp-cuda", B70, 512) == 0.0
    # RDNA2 runs FA_SCALAR too, but its Infinity Cache is not in the catalog and no row measures it: read once
    assert fa_scalar("llama.cpp-vulkan", RX6800XT) and extra_kv_bytes(op, "llama.cpp-vulkan", RX6800XT, 512) == 0
    # the pass time: the attention core's memory side grows by the extra bytes at bandwidth x eta_kv
    eng = get_engine("llama.cpp-vulkan", B70)
    rates = PassRates(B70, eng, "Q4_0", 512)
    t, bound = rates.time(op)
    assert bound == "memory"
    bw = rates.bw
    once = (op.kv_read_bytes + op.kv_write_bytes) / (bw * eng.eta_kv) + op.act_bytes / bw \
        + op.flops * eng.attn_bytes_per_flop / bw
    assert t == pytest.approx(once + extra / (bw * eng.eta_kv), rel=1e-9)


def test_explain_counts_the_rereads_in_the_attention_bytes():
    """explain's attention stage carries the bytes FA_SCALAR reads (one read + the block re-reads) and says why."""
    p = tokspeed.predict("llama-2-7b", "arc-pro-b70", quant="Q4_0", engine="llama.cpp-vulkan", prompt=512, gen=0,
                         context=16384)
    st = next(s for s in build_journey(p, "prefill").stages if s.label.startswith("attention over"))
    spec = resolve_model("llama-2-7b")[0]
    (op,) = attention_core_ops(spec, 2.0, 1, 512, 16384)
    assert st.kv_bytes == pytest.approx(op.kv_row_bytes / 8 + op.kv_write_bytes, rel=1e-9)
    assert "FA_SCALAR" in st.note
