"""Serving steps from mechanisms: engine releases (CUDA graphs, host overlap), GEMM paths by format and matrix
units, and the TP trend of a current-engine decode step. Values checked against the engines' sources and the
vendors' data sheets, not against the code's own output."""

import json
import subprocess
import sys

from tokspeed.hardware.catalog import get_hardware
from tokspeed.serving.engine_versions import release_entry, version_tuple
from tokspeed.serving.gemm_device import gemm_hardware, gemm_path
from tokspeed.serving.run import Load, evaluate
from tokspeed.serving_api import make_setup
from tokspeed.serving.schedulers import scheduler_for
from tokspeed.serving.worker import Parallelism


def test_vllm_013_does_not_hide_host_time_sglang_056_does():
    # vllm v0.13.0 vllm/config/scheduler.py: async_scheduling: bool = False; sglang v0.5.6 server_args.py:
    # disable_overlap_schedule: bool = False (the overlap scheduler on)
    assert scheduler_for("vllm", "0.13.0").overlap_host is False
    assert scheduler_for("sglang", "0.5.6").overlap_host is True
    # vllm v0.13.0 vllm/config/vllm.py: max_cudagraph_capture_size = min(max_num_seqs x 2, 512), max_num_seqs 1024
    assert scheduler_for("vllm", "0.13.0").graph_max == 512
    # vllm v0.6: decode graphs up to 256 (_BATCH_SIZES_TO_CAPTURE ends at 8 x 32)
    assert scheduler_for("vllm", "0.6.3").graph_max == 8 * 32


def test_release_lookup_takes_newest_entry_at_or_below():
    assert release_entry("vllm", "0.5.2") is None           # older than every entry: schedulers.toml stands
    assert version_tuple(release_entry("vllm", "0.12.0")["since"]) == (0, 11, 0)
    assert version_tuple(release_entry("vllm", None)["since"]) >= (0, 11, 0)
    assert release_entry("llama.cpp", "1.0") is None
    assert scheduler_for("tensorrt-llm", "0.17.0").graph_max == 0     # TensorRT engines: no CUDA-graph batch table


def test_gemm_paths_by_format_and_units():
    h200, b200, mi355x = get_hardware("h200-sxm"), get_hardware("b200"), get_hardware("mi355x")
    # Hopper has no FP4 units: MXFP4 runs W4A16 (Marlin / matmul_ogs) at the BF16 peak, 989 TFLOPS (H200 data sheet)
    assert gemm_path(h200, "MXFP4", "vllm") == "w4a16"
    assert gemm_hardware(h200, "MXFP4", "vllm").fp16_tflops == 989
    # NVFP4 on Blackwell: W4A4 at the FP4 peak, DGX B200 data sheet 144 PFLOPS sparse / 8 GPUs / 2 = 9,000 dense
    assert gemm_path(b200, "NVFP4", "tensorrt-llm") == "w4a4-fp4"
    assert gemm_hardware(b200, "NVFP4", "tensorrt-llm").fp16_tflops == 144e3 / 8 / 2
    # MXFP4 on Blackwell: W4A8 (MXFP8 activations) at the FP8 peak, 4,500 dense
    assert gemm_hardware(b200, "MXFP4", "tensorrt-llm").fp16_tflops == 4500
    # MI355X data sheet: 10.1 PFLOPS MXFP4 dense
    assert abs(gemm_hardware(mi355x, "MXFP4", "vllm").fp16_tflops - 10.1e3) < 50
    # FP8 W8A8 on Hopper: H200's FP8 dense peak 1,979
    assert gemm_hardware(h200, "FP8", "sglang").fp16_tflops == 1979
    # llama.cpp dequantizes to FP16 whatever the format
    assert gemm_hardware(b200, "NVFP4", "llama.cpp-cuda").fp16_tflops == b200.fp16_tflops


def _tpot(tp: int) -> float:
    setup = make_setup("gpt-oss-120b", "h200-sxm", "vllm", quant="MXFP4", isl=1024, osl=256, engine_version="0.13.0")
    out = evaluate(setup, Parallelism(tp=tp), 1, Load("concurrency", concurrency=4, n_requests=8))
    return out.tpot_ms.p50


def test_tpot_falls_with_tp_gpt_oss_h200_vllm_concurrency_4():
    # public InferenceMAX runs (data/validation/serving-calibration-2.csv, vLLM 0.13.0, 1k/1k, concurrency 4):
    # TPOT TP1 6.46 ms > TP2 4.98 > TP8 3.66
    t1, t2, t8 = _tpot(1), _tpot(2), _tpot(8)
    assert t8 < t2 < t1


def test_tensorrt_llm_serves_nvfp4():
    r = subprocess.run([sys.executable, "-m", "tokspeed", "serve", "llama-3.1-8b", "--hardware", "b200", "--engine",
                        "tensorrt-llm", "--quant", "NVFP4", "--isl", "512", "--osl", "128", "--concurrency", "4",
                        "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)


def test_every_fp4_peak_row_is_a_catalog_device_with_fp4_units_and_a_source():
    import tomllib

    from tokspeed.serving.gemm_device import FP4_UNITS, PEAKS

    with open(PEAKS, "rb") as f:
        table = tomllib.load(f)
    assert table
    for dev, row in table.items():
        hw = get_hardware(dev)
        assert set(hw.matrix_units) & FP4_UNITS, dev
        assert row["source"].strip()
        assert row["tflops"] >= 2 * hw.fp8_tflops, dev      # every data sheet: FP4 at least twice FP8
