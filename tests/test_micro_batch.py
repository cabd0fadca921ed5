"""llama.cpp's -ub / -b (prompt micro-batches) reach the kernel model: Workload cuts the prompt as llama.cpp does,
predict and the CLI take them, the calibration rows read them from their notes."""

import json
import subprocess
import sys

import pytest

from tokspeed.calibration.rows import NOTE_NBATCH, NOTE_NUMA, NOTE_UBATCH, note_option
from tokspeed.errors import UserError
from tokspeed.predict import predict
from tokspeed.workload import NBATCH, UBATCH, Workload


def test_chunks_follow_calls_and_ubatches():
    # -p 1000 -b 600 -ub 512: llama_decode calls of 600 and 400 tokens; the first splits 512 + 88 (llama-context.cpp)
    w = Workload(prompt=1000, gen=0, context=100, ubatch=512, n_batch=600)
    assert list(w.prefill_chunks()) == [(100, 512), (612, 88), (700, 400)]
    assert [w.starts_call(d) for d, _ in w.prefill_chunks()] == [True, False, True]


def test_ubatch_clamped_to_n_batch():
    w = Workload(prompt=4096, gen=0, ubatch=2048, n_batch=1024)     # n_ubatch = min(n_batch, n_ubatch)
    assert w.micro_batch == 1024
    assert [c for _, c in w.prefill_chunks()] == [1024] * 4


def test_defaults_are_llama_bench_defaults():
    w = Workload(prompt=2048, gen=0)
    assert (w.ubatch, w.n_batch) == (512, 2048) == (UBATCH, NBATCH)
    assert [c for _, c in w.prefill_chunks()] == [512] * 4


def test_bad_ubatch_refused():
    with pytest.raises(UserError):
        Workload(ubatch=0)


def test_larger_ubatch_reads_weights_fewer_times():
    # a 2,048-token prompt at -ub 2048 is one pass: the weights are read once instead of four times, and every
    # GEMM runs over more tokens: prefill is faster, the activations larger (activation_bytes: tokens per pass)
    small = predict("llama-2-7b", "rtx-4090", quant="Q4_0", prompt=2048, gen=1)
    big = predict("llama-2-7b", "rtx-4090", quant="Q4_0", prompt=2048, gen=1, ubatch=2048)
    assert big.prefill.tok_s > small.prefill.tok_s
    spec = small.spec
    per_token = (spec.vocab_size + 3 * spec.d_ff + 4 * spec.d_model) * 4
    assert small.memory.activations_bytes == 512 * per_token
    assert big.memory.activations_bytes == 2048 * per_token
    assert small.decode.tok_s == big.decode.tok_s              # decode is one token a pass either way


def test_cli_takes_ub_and_b():
    def run(*extra):
        out = subprocess.run([sys.executable, "-m", "tokspeed", "predict", "llama-2-7b", "--hw", "rtx-4090",
                              "--prompt", "2048", "--json", *extra], capture_output=True, text=True)
        return out
    base, ub = run(), run("-ub", "2048")
    assert base.returncode == ub.returncode == 0
    assert json.loads(ub.stdout)["prefill"]["tok_s"] > json.loads(base.stdout)["prefill"]["tok_s"]
    same = run("--ubatch", "2048", "--batch-size", "512")            # clamped back to 512 by -b
    assert json.loads(same.stdout)["prefill"]["tok_s"] == json.loads(base.stdout)["prefill"]["tok_s"]
    bad = run("-ub", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.strip().count("\n") <= 1


def test_row_notes_map_onto_options():
    note = "llama-bench -ngl 99 -fa 1 -p 2048 -n 32 -d 32768 -ub 2048; build 2aa45ef9e (7423)"
    assert note_option(NOTE_UBATCH, note, UBATCH) == 2048
    assert note_option(NOTE_NBATCH, note, NBATCH) == NBATCH          # no -b: llama-bench's default
    assert note_option(NOTE_NBATCH, "llama-bench -b 4096 -ub 1024", NBATCH) == 4096
    assert note_option(NOTE_NUMA, "1x Epyc 9374F, llama-bench --numa distribute -t 32", None) == "distribute"
    assert note_option(NOTE_UBATCH, "b7423 rocm", UBATCH) == UBATCH


def test_calibration_rows_carry_their_ubatch():
    from tokspeed.calibration.rows import REPO_CSV3, load_rows

    rows = {r.id: r for r in load_rows(REPO_CSV3)}
    assert rows["c3-0001"].ubatch == 2048          # its note: -ub 2048
    assert rows["c3-0002"].ubatch == 2048 and rows["c3-0249"].ubatch == UBATCH     # c3-0249 states no -ub
    # --numa distribute on one socket changes nothing (engines/cpu.py with_numa): the row's -t 32 still applies
    assert any(d.startswith("32 threads") for d in rows["c3-0249"].hw.derived)
