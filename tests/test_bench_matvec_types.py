"""benchmarks/bench_cpu_matvec_types.py: the FLOPs it divides by and the GGUFs it writes (random bytes of each ggml
type), checked against the shapes by hand and against gguf's own reader."""

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

gguf = pytest.importorskip("gguf")
bench = pytest.importorskip("bench_cpu_matvec_types")


def test_matmul_flops_by_hand():
    # small: 2 layers x (q, k, v, o: 4 x 768 x 768 + gate, up, down: 3 x 2048 x 768) x 2 FLOPs
    assert bench.matmul_flops(bench.SHAPES["small"]) == 2 * 2 * (4 * 768 * 768 + 3 * 2048 * 768) == 28_311_552
    # tiny: 1 layer, q = 2 heads x 128 = 256 = d
    assert bench.matmul_flops(bench.SHAPES["tiny"]) == 2 * (4 * 256 * 256 + 3 * 768 * 256)


@pytest.mark.parametrize("qtype", ["Q4_0", "Q5_K", "IQ4_NL", "MXFP4"])
def test_written_tensors_are_of_the_type_and_size(tmp_path, qtype):
    path = tmp_path / "m.gguf"
    bench.write_model(path, qtype, bench.SHAPES["tiny"])
    t = gguf.GGMLQuantizationType[qtype]
    block, size = gguf.GGML_QUANT_SIZES[t]
    tensors = {x.name: x for x in gguf.GGUFReader(str(path)).tensors}
    down = tensors["blk.0.ffn_down.weight"]
    assert down.tensor_type == t
    assert down.n_bytes == 256 * 768 // block * size          # d rows of ff columns
    assert tensors["token_embd.weight"].tensor_type == gguf.GGMLQuantizationType.F32
    # every 2-byte field's high byte has its exponent below Inf / NaN (0x7C00 of an fp16)
    raw = np.asarray(down.data).reshape(-1)
    assert raw.size == down.n_bytes and int((raw[1::2] & 0x7C).max()) < 0x7C


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--threads", "-3"], ["--threads", "99999"], ["--rounds", "x"]])
def test_bad_counts_are_one_line_and_exit_2(args, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main([*args, "--no-write"])
    assert e.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_a_binary_that_is_not_llama_bench_gives_one_line(tmp_path, capsys):
    fake = tmp_path / "llama-bench\x1b[31m"         # a name with a terminal escape: printed escaped
    fake.write_text("#!/bin/sh\necho 'avg_ns'\necho nan\n")
    fake.chmod(0o755)
    assert bench.main(["--llama-bench", str(fake), "--rounds", "1", "--no-write"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gave no usable timing" in err and "\x1b" not in err
