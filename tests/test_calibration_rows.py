"""calibration.csv loading: every line parsed, each row's hardware built from its own columns, the
skip rules, quant mapping and device families."""

import csv
from pathlib import Path

import pytest

from tokspeed.calibration import DEFAULT_CSV, device_family, load_rows
from tokspeed.calibration.rows import SKIP_FLAGS, map_quant
from tokspeed.hardware.catalog import get_hardware



@pytest.fixture(scope="module")
def rows():
    return load_rows(DEFAULT_CSV)


def test_every_line_becomes_a_row(rows):
    with open(DEFAULT_CSV, newline="") as f:
        raw = list(csv.DictReader(f))
    assert len(rows) == len(raw)
    assert [r.id for r in rows] == [d["id"] for d in raw]
    for r, d in zip(rows, raw):
        assert r.tok_s == float(d["tok_s"])
        assert r.metric == d["metric"]
        assert r.engine == d["engine"]


def test_hardware_comes_from_the_row(rows):
    with open(DEFAULT_CSV, newline="") as f:
        raw = {d["id"]: d for d in csv.DictReader(f)}
    for r in rows:
        d = raw[r.id]
        assert r.hw.name == d["hardware"]
        assert r.hw.kind == d["hardware_kind"]
        assert r.hw.bandwidth_gbps == float(d["bandwidth_GBps"])
        if d["fp16_TFLOPS"]:
            assert r.hw.fp16_tflops == float(d["fp16_TFLOPS"])
        else:          # the catalog's figure for the device (every calibration device is in the catalog)
            assert r.hw.fp16_tflops == get_hardware(d["hardware"]).fp16_tflops > 0
        if d["memory_GB"]:
            assert r.hw.memory_gb == float(d["memory_GB"])


def test_a_row_without_an_fp16_peak_takes_the_derived_one(rows):
    """RTX 6000 Ada rows state no FP16 peak; the catalog derives it: 142 SMs x 1024 FP16 FLOPs per SM per clock
    (FP32 accumulate at full rate on the workstation part) x 2.505 GHz boost = 364.2 TFLOPS. Its prefill rows are
    scored (they were skipped as 'no FP16 peak' before), and its board power comes with it (300 W)."""
    ada = [r for r in rows if r.hw.name == "NVIDIA RTX 6000 Ada Generation"]
    assert ada
    assert all(r.hw.fp16_tflops == pytest.approx(142 * 1024 * 2.505e9 / 1e12, rel=1e-3) for r in ada)
    assert all(r.hw.tdp_w == 300 for r in ada)
    assert any(r.metric == "prefill" and not r.skip for r in ada)


def test_a_cpu_engine_row_on_a_soc_sees_its_cpu_cluster():
    """A llama.cpp-cpu row on an Apple SoC: the CSV gives the package's 800 GB/s, the catalog the CPU cluster's
    share (AnandTech's M1 Max measurement: ~224 of 409.6 GB/s, the same share assumed for an Ultra's two dies), so
    the row is predicted from what its CPU cores can pull, as for the catalog device, not from the GPU's bandwidth."""
    from tokspeed.calibration.rows import row_hardware
    from tokspeed.predict import predict

    row = {"id": "x", "hardware": "Apple M2 Ultra (76-core GPU)", "hardware_kind": "soc", "vendor": "Apple",
           "memory_GB": "192", "bandwidth_GBps": "800", "fp16_TFLOPS": ""}
    hw, cat = row_hardware(row), get_hardware("m2-ultra-76")
    assert hw.cpu_bandwidth_gbps == pytest.approx(800 * 224 / 409.6, rel=0.01) and hw.cpu_threads == cat.cpu_threads
    cpu = predict("llama-2-7b", hw, quant="Q4_0", engine="llama.cpp-cpu", prompt=0, gen=128, context=0).decode.tok_s
    gpu = predict("llama-2-7b", hw, quant="Q4_0", engine="llama.cpp-metal", prompt=0, gen=128, context=0).decode.tok_s
    assert cpu == pytest.approx(predict("llama-2-7b", cat, quant="Q4_0", engine="llama.cpp-cpu", prompt=0, gen=128,
                                        context=0).decode.tok_s, rel=1e-9)
    assert cpu < 0.7 * gpu


def test_a_rows_memory_technology_is_its_catalog_devices():
    """The CSV has no memory column: a row's device takes its catalog entry's memory type (the MI50 rows, named
    "AMD Instinct MI50 32GB (gfx906)", are HBM2 as the catalog's mi50 is, and answer with the HBM efficiency a
    user's `--hardware mi50` gets), else the class its name and kind imply."""
    from tokspeed.calibration.rows import CALIBRATION_CSVS
    from tokspeed.engines.memory import memory_class

    rows = load_rows(list(CALIBRATION_CSVS))
    mi50 = [r for r in rows if r.hw.arch == "gcn5"]
    assert mi50 and all(memory_class(r.hw) == "hbm" == memory_class(get_hardware("mi50")) for r in mi50)
    r9700 = [r for r in rows if "R9700" in r.hw.name]
    assert r9700 and all(memory_class(r.hw) == "gddr" for r in r9700)


def test_skip_rules(rows):
    with open(DEFAULT_CSV, newline="") as f:
        raw = {d["id"]: d for d in csv.DictReader(f)}
    for r in rows:
        d = raw[r.id]
        flag = d["flags"].split("=")[0]
        if flag in SKIP_FLAGS:
            assert r.skip == flag
        elif int(d["n_devices"]) > 1 and not r.skip.startswith(("model", "quant", "no FP16", "prompt")):
            # the fit takes a layer split run in turn (calibration/split_rows.py): these CUDA rows are 2023-24 builds,
            # -ub 512, prompts pipelined from 2024 (llama.cpp PR #6017) when longer than one micro-batch
            in_turn = d["parallel"] == "layer-split" and int(d["batch"] or 1) == 1 and (
                d["metric"] != "prefill" or int(d["prompt_tokens"]) <= 512 or r.era == "2023")
            assert r.skip == ("" if in_turn else "multi-device"), r.id
        if not r.skip:
            assert (r.n_devices == 1 or r.parallel == "layer-split") and r.flags in ("", "MULTI_GPU")
            if r.metric == "prefill":
                assert r.prompt > 0 and r.hw.fp16_tflops > 0
    scored = [r for r in rows if not r.skip]
    assert len(scored) > 300
    assert {r.engine for r in scored} >= {"llama.cpp-cuda", "llama.cpp-metal"}


def test_decode_rows_keep_their_lengths(rows):
    """r0002: M1 decode, 0-token prompt, 128 generated, batch 1 (as printed in the CSV)."""
    r = {x.id: x for x in rows}["r0002"]
    assert (r.metric, r.prompt, r.gen, r.context, r.batch) == ("decode", 0, 128, 0, 1)
    assert r.hw.bandwidth_gbps == 68.25 and r.family == "Apple M1"


def test_quant_mapping():
    assert map_quant("INT8 (weight-only)") == "INT8"
    assert map_quant("INT4-G32") == "INT4-G32"
    assert map_quant("Q4_K_M") == "Q4_K_M"
    assert map_quant("F16") == "F16"
    # llama-bench's "model" column spells the file type: "llama 8B Q4_K - Medium", "gpt-oss 20B MXFP4 MoE"
    for bench, ours in (("Q4_K - Medium", "Q4_K_M"), ("Q4_K - Small", "Q4_K_S"), ("Q5_K - Medium", "Q5_K_M"),
                        ("Q2_K - Medium", "Q2_K"), ("Q3_K - Large", "Q3_K_L"), ("IQ4_XS - 4.25 bpw", "IQ4_XS"),
                        ("MXFP4 MoE", "MXFP4"), ("Q4_0_4_4", "Q4_0"), ("EXL2 4.0bpw", "EXL2-4.0"), ("AWQ", "AWQ-4B")):
        assert map_quant(bench) == ours, bench


def test_engine_spellings_of_tables_and_users():
    from tokspeed.engines.compat import engine_key

    for given, ours in (("llama.cpp (CUDA)", "llama.cpp-cuda"), ("llama.cpp Vulkan", "llama.cpp-vulkan"),
                        ("llama.cpp-hip", "llama.cpp-rocm"), ("LM Studio", "lm-studio"), ("TRT-LLM", "tensorrt-llm"),
                        ("vLLM", "vllm"), ("llamacpp", "llama.cpp"), ("llama.cpp-metal", "llama.cpp-metal"),
                        ("llama.cpp (cuBLAS)", "llama.cpp-cuda"), ("ollama (CUDA)", "ollama"),
                        ("LM Studio (MLX)", "mlx"), ("TensorRT", "tensorrt")):       # TensorRT is not TensorRT-LLM
        assert engine_key(given) == ours, given


def test_a_row_names_its_model_as_a_repo_or_a_table_does():
    from tokspeed.calibration.rows import _model_id

    assert _model_id("meta-llama/Meta-Llama-3.1-8B-Instruct") == "llama-3.1-8b"
    assert _model_id("gpt-oss 20B") == "gpt-oss-20b"
    assert _model_id("Qwen/Qwen2.5-7B-Instruct-AWQ") == "qwen2.5-7b"         # the quant column gives the format
    assert _model_id("someone/llama-3.1-8b-pruned") == "someone/llama-3.1-8b-pruned"     # kept, then skipped


@pytest.mark.parametrize("name,vendor,family", [
    ("NVIDIA GeForce RTX 4090", "NVIDIA", "NVIDIA Ada"),
    ("NVIDIA RTX 5000 Ada Generation", "NVIDIA", "NVIDIA Ada"),
    ("NVIDIA GeForce RTX 5090", "NVIDIA", "NVIDIA Blackwell"),
    ("NVIDIA RTX A6000", "NVIDIA", "NVIDIA Ampere"),
    ("NVIDIA A100 80GB SXM4", "NVIDIA", "NVIDIA Ampere"),
    ("NVIDIA Jetson AGX Orin 64GB", "NVIDIA", "NVIDIA Ampere"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA", "NVIDIA Hopper"),
    ("NVIDIA Tesla V100-SXM2-16GB", "NVIDIA", "NVIDIA Volta"),
    ("NVIDIA GeForce RTX 2080 Ti", "NVIDIA", "NVIDIA Turing"),
    ("NVIDIA Tesla P40", "NVIDIA", "NVIDIA Pascal"),
    ("Apple M2 Ultra (76-core GPU)", "Apple", "Apple M2"),
    ("Apple M4 Max (40-core GPU)", "Apple", "Apple M4"),
    ("AMD Radeon RX 7900 XTX", "AMD", "AMD"),
])
def test_device_family(name, vendor, family):
    assert device_family(name, vendor) == family


def test_the_data_ships_with_the_repository(rows):
    repo = Path(__file__).resolve().parents[1]
    assert DEFAULT_CSV == repo / "data" / "validation" / "calibration.csv"
    assert (repo / "data" / "validation" / "README.md").is_file()
    # every llama.cpp row is dated, so it belongs to one engine era
    llama = [r for r in rows if r.engine.startswith("llama.cpp")]
    assert llama and all(r.era in ("2023", "2024", "2025") for r in llama)
    by_id = {r.id: r for r in rows}
    assert by_id["r0001"].era == "2023" and by_id["r0348"].era == "2025"   # 2023-11 scoreboard; b7948


def test_a_rate_that_is_not_a_finite_positive_number_skips_its_row(tmp_path):
    # a user's calibration CSV (TOKSPEED_CALIBRATION_CSV) goes through the typed gate: nan, inf, 0, a negative rate,
    # a word or a number past 2**53 skip the row with one reason; none raises, none reaches the fit as a number
    from tokspeed.calibration.rows import REPO, load_rows
    header = (REPO / "data" / "validation" / "calibration.csv").read_text().splitlines()[0]
    line = ("{i},src,NVIDIA GeForce RTX 4090,gpu,NVIDIA,1,none,1008,165,24,llama-3-8b,F16,,llama.cpp-cuda,decode,"
            "0,128,0,1,{v},high,,,2024-05,row,")
    bad = ["nan", "inf", "-inf", "0", "-5", "fast", "1e400", str(2**60)]
    path = tmp_path / "user.csv"
    path.write_text("\n".join([header] + [line.format(i=f"u{k}", v=v) for k, v in enumerate(bad + ["150.5"])]) + "\n")
    rows = load_rows(path)
    assert [r.skip for r in rows[:-1]] == ["tok_s not a finite rate > 0"] * len(bad)
    assert rows[-1].skip == "" and rows[-1].tok_s == 150.5


def test_counts_figures_and_note_options_go_through_the_typed_gate(tmp_path):
    # every other number of a user's calibration CSV: a word, nan, inf, a negative, a fraction or 5,000 digits in a
    # count, a device figure or a note's -ub / -b / -t skips its row naming the column; none raises, and a prompt the
    # fit would walk in more than workload.MAX_PREFILL_PASSES micro-batches is skipped before any walking
    from tokspeed.calibration.rows import REPO, load_rows
    from tokspeed.workload import MAX_PREFILL_PASSES
    header = (REPO / "data" / "validation" / "calibration.csv").read_text().splitlines()[0]
    cols = header.split(",")
    good = dict(zip(cols, ("u,src,NVIDIA GeForce RTX 4090,gpu,NVIDIA,1,none,1008,165,24,llama-3-8b,F16,,"
                           "llama.cpp-cuda,prefill,512,0,0,1,9000,high,,,2024-05,row,").split(",")))
    huge = "9" * 5000
    cases = [("prompt_tokens", "many", "prompt_tokens not a whole number in range"),
             ("prompt_tokens", "512.5", "prompt_tokens not a whole number in range"),
             ("context_depth", "-1", "context_depth not a whole number in range"),
             ("batch", huge, "batch not a whole number in range"),
             ("gen_tokens", "nan", "gen_tokens not a whole number in range"),
             ("n_devices", str(2**40), "n_devices not a whole number in range"),
             ("bandwidth_GBps", "inf", "bandwidth_GBps not a finite number in range"),
             ("fp16_TFLOPS", "-165", "fp16_TFLOPS not a finite number in range"),
             ("memory_GB", "1e400", "memory_GB not a finite number in range"),
             ("model_bytes", "big", "model_bytes not a finite number in range"),
             ("note", "llama-bench -ub 0", "note's -ub / -b not a whole number >= 1 in range"),
             ("note", f"llama-bench -b {huge}", "note's -ub / -b not a whole number >= 1 in range"),
             ("note", "llama-bench -t 0", "note's thread count not a whole number >= 1 in range"),
             ("note", "llama-bench -ub 1", ""),                  # 512 micro-batches: scored
             ]
    lines = [header]
    for k, (col, value, _) in enumerate(cases):
        row = dict(good, id=f"u{k}", **{col: value})
        lines.append(",".join(row[c] for c in cols))
    long = dict(good, id="long", prompt_tokens=str(MAX_PREFILL_PASSES + 1), note="-ub 1")   # one pass too many
    fine = dict(good, id="fine", prompt_tokens="512.0")                                       # a whole number
    lines += [",".join(r[c] for c in cols) for r in (long, fine)]
    path = tmp_path / "user.csv"
    path.write_text("\n".join(lines) + "\n")
    rows = {r.id: r for r in load_rows(path)}
    for k, (col, value, reason) in enumerate(cases):
        assert rows[f"u{k}"].skip == reason, (col, value[:20])
    assert rows["u13"].ubatch == 1 and rows["u11"].n_batch == 2048
    assert rows["long"].skip == f"prompt of {MAX_PREFILL_PASSES + 1:,} micro-batches (at most {MAX_PREFILL_PASSES:,})"
    assert rows["fine"].skip == "" and rows["fine"].prompt == 512
