"""`tokspeed measure --from FILE`: llama-bench's outputs read in every format, each test predicted, a machine calibrated.

The fixtures in tests/data/llama_bench/ are one run (RTX 4090, Llama 3.1 8B Q4_K_M, pp512 / tg128 / tg128 @ d4096)
laid out as llama-bench.cpp's printers write them (json_printer, jsonl_printer, csv_printer, markdown_printer,
sql_printer: field names, order, quoting, the markdown widths and its ``build:`` line)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tokspeed.errors import UserError
from tokspeed.measure.bench_compare import calibrate_from, compare, engine_of, model_of, quant_of
from tokspeed.measure.llama_bench import BenchRow, read_bench, sniff
from tokspeed.measure.profile import dumps_toml
from tokspeed.predict import predict

DATA = Path(__file__).parent / "data" / "llama_bench"
FULL = ("json", "jsonl", "csv", "sql")        # the formats that carry every field
# the run's samples (tok/s) as llama-bench timed them; avg_ts is their mean
TG128 = [151.62, 151.88, 151.41, 151.95, 151.70]


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("fmt", FULL + ("md",))
def test_every_format_reads_the_same_three_tests(fmt):
    rows = read_bench(DATA / f"rtx4090-llama31-8b.{fmt}")
    assert [r.test for r in rows] == ["pp512", "tg128", "tg128 @ d4096"]
    assert [r.metric for r in rows] == ["prefill", "decode", "decode"]
    assert rows[1].avg_ts == pytest.approx(sum(TG128) / 5, abs=0.01)      # 151.71
    assert rows[2].n_depth == 4096 and rows[2].n_gen == 128 and rows[0].n_prompt == 512
    assert rows[0].n_gpu_layers == 99 and rows[0].flash_attn == 1
    assert rows[0].build == "e60f241e (6942)"
    assert quant_of(rows[0]) == "Q4_K_M"                 # "Q4_K - Medium": llama_model_ftype_name's words
    # 4.58 GiB as the markdown prints it, the exact bytes elsewhere
    assert rows[0].model_size == pytest.approx(4920734720, rel=1e-3 if fmt == "md" else 0)


@pytest.mark.parametrize("fmt", FULL)
def test_full_formats_name_the_device_and_the_model_file(fmt):
    rows = read_bench(DATA / f"rtx4090-llama31-8b.{fmt}")
    assert rows[0].gpu_info == "NVIDIA GeForce RTX 4090" and rows[0].backend == "CUDA"
    assert model_of(rows[0]) == "llama-3.1-8b"


def test_file_names_give_model_and_format():
    row = BenchRow("/m/tinyllama-1.1b-chat-v1.0.Q8_0.gguf", "", 0, 0, "Metal,BLAS", 99, 0, 128, 0, 100.0)
    assert quant_of(row) == "Q8_0"
    row = BenchRow("Qwen3-30B-A3B-UD-Q4_K_XL-00001-of-00002.gguf", "qwen3moe 30B.A3B Q4_K - Medium", 0, 0, "CUDA",
                   99, 0, 128, 0, 100.0)
    assert model_of(row) == "qwen3-30b-a3b" and quant_of(row) == "Q4_K_M"


@pytest.mark.parametrize("model_type, quant", [
    # llama_model_ftype_name's words for the file types outside the (I)Qn_ pattern (llama-model-loader.cpp)
    ("gpt-oss 20B MXFP4 MoE", "MXFP4"), ("llama 8B BF16", "BF16"), ("llama 8B F16", "F16"),
    ("llama 8B all F32", "F32"), ("bitnet 3B TQ1_0 - 1.69 bpw ternary", "TQ1_0")])
def test_file_types_outside_the_q_pattern(model_type, quant):
    assert quant_of(BenchRow("m.gguf", model_type, 0, 0, "CUDA", 99, 0, 128, 0, 100.0)) == quant


def test_backend_words_pick_the_engine():
    # llama-bench's backends column: the first backend ran the test; HIP is ROCm's older name; -ngl 0 is the CPU
    def engine(backend, ngl=99):
        return engine_of(BenchRow("m.gguf", "", 0, 0, backend, ngl, 0, 128, 0, 100.0))

    assert engine("CUDA") == "llama.cpp-cuda" and engine("Metal,BLAS") == "llama.cpp-metal"
    assert engine("HIP") == engine("ROCm") == "llama.cpp-rocm" and engine("CUDA", ngl=0) == "llama.cpp-cpu"
    with pytest.raises(UserError):
        engine("OpenCL")


def test_each_test_is_predicted_as_predict_would():
    compared, skipped = compare(read_bench(DATA / "rtx4090-llama31-8b.json"))
    assert not skipped and [c.engine for c in compared] == ["llama.cpp-cuda"] * 3
    p = predict("llama-3.1-8b", "rtx-4090", quant="Q4_K_M", engine="llama.cpp-cuda", prompt=0, gen=128,
                context=4096, flash_attention=True, engine_version="b6942")
    assert compared[2].predicted_tok_s == pytest.approx(p.decode.tok_s, rel=1e-9)
    assert compared[2].error_pct == pytest.approx((p.decode.tok_s / compared[2].row.avg_ts - 1) * 100, rel=1e-9)


def test_mixed_test_counts_both_times():
    row = BenchRow("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "llama 8B Q4_K - Medium", 0, 0, "CUDA", 99, 512, 128,
                   0, 1000.0, gpu_info="NVIDIA GeForce RTX 4090")
    (c,), _ = compare([row])
    p = predict("llama-3.1-8b", "rtx-4090", quant="Q4_K_M", engine="llama.cpp-cuda", prompt=512, gen=128)
    assert c.predicted_tok_s == pytest.approx(640 / (512 / p.prefill.tok_s + 128 / p.decode.tok_s), rel=1e-9)


def test_a_file_of_too_much_prompt_work_is_one_line_before_any_prediction(tmp_path):
    # 40 tests of 32,768 one-token micro-batches each: every test is within the per-prompt cap, the file is not
    from tokspeed.measure.llama_bench import MAX_FILE_PASSES
    line = json.dumps({"n_prompt": 32768, "n_gen": 0, "n_ubatch": 1, "n_batch": 2048, "avg_ts": 100.0})
    path = tmp_path / "big.jsonl"
    path.write_text((line + "\n") * 40)
    with pytest.raises(UserError) as e:
        read_bench(path)
    assert f"{40 * 32768:,} micro-batches in all" in e.value.message and f"{MAX_FILE_PASSES:,}" in e.value.message
    path.write_text((line + "\n") * 32)                 # 32 x 32,768 = the file cap: read
    assert len(read_bench(path)) == 32


def test_a_test_is_predicted_at_its_own_ubatch_batch_and_threads():
    # -ub 2048 -b 2048 over a 4,096-token prompt: two micro-batches of 2,048 (predict's ubatch / n_batch), not eight
    # of llama.cpp's default 512; -t 4 on the CPU backend computes on 4 of the 16 cores' SIMD units
    from dataclasses import replace

    from tokspeed.engines.cpu import with_threads
    from tokspeed.hardware.catalog import get_hardware
    gpu = BenchRow("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "llama 8B Q4_K - Medium", 0, 0, "CUDA", 99, 4096, 0,
                   0, 1000.0, n_batch=2048, n_ubatch=2048, gpu_info="NVIDIA GeForce RTX 4090")
    (c,), _ = compare([gpu])
    want = predict("llama-3.1-8b", "rtx-4090", quant="Q4_K_M", engine="llama.cpp-cuda", prompt=4096, gen=1,
                   ubatch=2048, n_batch=2048).prefill.tok_s
    default = predict("llama-3.1-8b", "rtx-4090", quant="Q4_K_M", engine="llama.cpp-cuda", prompt=4096,
                      gen=1).prefill.tok_s
    assert c.predicted_tok_s == pytest.approx(want, rel=1e-9) and want != pytest.approx(default, rel=1e-3)
    cpu = replace(gpu, backend="CPU", n_gpu_layers=0, n_threads=4, cpu_info="AMD Ryzen 9 7950X 16-Core Processor")
    hw = get_hardware("ryzen-9-7950x")
    (c,), _ = compare([cpu], hardware=hw)
    want = predict("llama-3.1-8b", with_threads(hw, 4), quant="Q4_K_M", engine="llama.cpp-cpu", prompt=4096, gen=1,
                   ubatch=2048, n_batch=2048).prefill.tok_s
    sixteen = predict("llama-3.1-8b", hw, quant="Q4_K_M", engine="llama.cpp-cpu", prompt=4096, gen=1,
                      ubatch=2048, n_batch=2048).prefill.tok_s
    assert c.predicted_tok_s == pytest.approx(want, rel=1e-9) and want < sixteen / 2


@pytest.mark.parametrize("text, why", [
    ("hello world", "not llama-bench output"),
    ("[1, 2]", "not llama-bench JSON"),
    ('{"n_prompt": 512, "n_gen": 0}\n', "no speed"),
    ('{"n_prompt": 99999999999, "n_gen": 0, "avg_ts": 1}\n', "out of range"),
    ('{"n_prompt": 512, "n_gen": 0, "avg_ts": "nan"}\n', "not a measurement"),
    ("[" * 100 + "]" * 100, "nested"),
    ("| model | test |\n| --- | --- |\n| x | pp512 |\n", "without llama-bench's test and t/s"),
    ("| test | t/s |\n| --- | --- |\n| pp512 | fast |\n", "not llama-bench's"),
    ("build_commit,n_prompt\n\"a\",\"12x\"\n", "not a whole number"),
    ("INSERT INTO llama_bench (a, b) VALUES ('1');\n", "2 fields but 1 values"),
])
def test_bad_files_are_one_clear_error(tmp_path, text, why):
    p = tmp_path / "bench.out"
    p.write_text(text)
    with pytest.raises(UserError, match=why):
        read_bench(p)


def test_cli_bad_file_is_one_line_exit_2(tmp_path):
    p = tmp_path / "bench.json"
    p.write_bytes(b"\xff\xfe" + b"\x00" * 64)
    r = _run("measure", "--from", str(p))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1


def test_cli_json_is_strict(tmp_path):
    r = _run("measure", "--from", str(DATA / "rtx4090-llama31-8b.jsonl"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert [t["test"] for t in out["tests"]] == ["pp512", "tg128", "tg128 @ d4096"]
    assert out["tests"][1]["measured_tok_s"] == pytest.approx(151.71, abs=0.01)


def _gpu_profile(tmp_path):
    """A probed profile of an RTX 4090 machine: its measured read bandwidth (a probe gets ~90 % of 1008 GB/s)."""
    p = tmp_path / "local.toml"
    p.write_text(dumps_toml({"name": "NVIDIA GeForce RTX 4090 (measured)", "kind": "gpu", "vendor": "NVIDIA",
                             "memory_gb": 23.99, "bandwidth_gbps": 910.0, "fp16_tflops": 165.0,
                             "fp32_tflops": 82.6, "arch": "ada", "measured": {"gpu_read_gbps": 910.0},
                             "calibration": {}}))
    return p


def test_calibrated_profile_moves_a_later_prediction(tmp_path):
    prof = _gpu_profile(tmp_path)
    before = predict("qwen2.5-7b", str(prof), quant="Q4_K_M", engine="llama.cpp", prompt=0, gen=128)
    compared, _ = compare(read_bench(DATA / "rtx4090-llama31-8b.json"), hardware=_hw(prof))
    cal = calibrate_from(compared, _hw(prof), prof)
    assert cal.n_points == 2 and cal.backend == "llama.cpp"
    after = predict("qwen2.5-7b", str(prof), quant="Q4_K_M", engine="llama.cpp", prompt=0, gen=128)
    assert after.decode.tok_s != pytest.approx(before.decode.tok_s, rel=1e-3)
    assert "this machine's calibration" in after.engine_profile.source
    # the band is what the user's rows support: two RMS errors of the fit, at least 5 %
    assert after.engine_profile.decode_error_pct == pytest.approx(max(5.0, 200 * cal.rms_rel_error))
    # and the calibrated model reproduces the run it was fitted on
    again = predict("llama-3.1-8b", str(prof), quant="Q4_K_M", engine="llama.cpp", prompt=0, gen=128,
                    flash_attention=True)
    assert again.decode.tok_s == pytest.approx(151.71, rel=0.05)


def _hw(path):
    from tokspeed.hardware.catalog import hardware_from_toml

    return hardware_from_toml(path)


def test_calibrate_needs_a_profile():
    compared, _ = compare(read_bench(DATA / "rtx4090-llama31-8b.csv"))
    with pytest.raises(UserError, match="probed hardware profile"):
        calibrate_from(compared, None, None)


def test_sniff_names_each_format():
    assert [sniff((DATA / f"rtx4090-llama31-8b.{f}").read_text()) for f in ("json", "jsonl", "csv", "md", "sql")] \
        == ["json", "jsonl", "csv", "md", "sql"]
