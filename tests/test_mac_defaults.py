"""A Mac as a new user meets it: the mlx engine assumes MLX's own 4-bit conversion (what people download),
its suggestions are MLX formats, and the usable memory is explained by macOS's GPU wired limit."""

from tokspeed import predict
from tokspeed.hardware.catalog import get_hardware
from tokspeed.quant.schemes import scheme_for

from conftest import run_cli


def test_mlx_4bit_is_4_5_bits_per_weight():
    # mlx-lm convert -q: 4 bits, group 64, one 16-bit scale and one 16-bit bias per group
    f = scheme_for("MLX-4BIT").linear
    assert f.block_bytes / f.block * 8 == (64 * 4 + 2 * 16) / 64 == 4.5


def test_mlx_assumes_its_4bit_conversion_and_qwen3_30b_fits_a_36gb_m4_max():
    p = predict("qwen3-30b-a3b", "m4-max-32", engine="mlx")
    assert p.quant == "MLX-4BIT" and "MLX" in p.quant_assumed and p.memory.fits
    # 30.5 B parameters x 4.5 bits ~ 17.2 GB: well under the 24 GiB the GPU may wire
    assert 16e9 < p.memory.weights_bytes < 18.5e9


def test_a_bf16_mlx_run_that_does_not_fit_suggests_mlx_formats():
    r = run_cli("predict", "qwen3-30b-a3b", "--hardware", "m4-max-32", "--engine", "mlx", "--quant", "BF16")
    assert "MLX-" in r.stdout and "INT4-G128" not in r.stdout


def test_the_macs_usable_memory_is_the_gpu_wired_limit_and_says_how_to_raise_it():
    m36, m128 = get_hardware("m4-max-32"), get_hardware("m4-max-40")
    assert m36.memory_gb == 36 and m36.usable_bytes == 24 * 2**30          # 2/3 of 36 GiB
    assert m128.memory_gb == 128 and m128.usable_bytes == 96 * 2**30       # 3/4 above 36 GiB
    assert "iogpu.wired_limit_mb" in m36.usable_note() and "2/3" in m36.usable_note()
    assert get_hardware("rtx-4090").apple_wired_share == 0.0
    r = run_cli("predict", "qwen3-30b-a3b", "--hardware", "m4-max-32")
    flat = "".join(ch for ch in r.stdout if not ch.isspace() and ch not in "│┃")
    assert "macOSletstheGPUwire2/3of36GB" in flat and "iogpu.wired_limit_mb" in flat
