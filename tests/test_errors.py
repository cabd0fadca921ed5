import subprocess
import sys


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True)


def test_unknown_command_is_one_line_exit_2():
    r = run_cli("no-such-verb")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


def one_line_exit_2(r):
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    return r.stderr


def test_absurd_threads_are_refused_before_torch_sees_them():
    """--threads 100000 segfaulted inside torch.set_num_threads; 1e30 overflowed."""
    for n in ("100000", "1e30"):
        assert "--threads" in one_line_exit_2(run_cli("measure", "llama-3-8b", "--hardware", "rtx-4090", "--threads", n))


def test_a_value_with_a_newline_stays_one_error_line():
    err = one_line_exit_2(run_cli("bench-server", "--summarize", "run\nFAKE LINE"))
    assert "FAKE LINE" in err and "\\n" in err


def test_fit_offload_experts_without_moe_ranks_the_moe_models():
    """It failed on the first dense model instead of ranking the MoE ones."""
    from tokspeed.errors import UserError
    from tokspeed.advise.runs_here import rank_models
    from tokspeed.models.catalog import get_model

    rows = rank_models("rtx-4090", offload="experts", top=5)
    assert rows and all(get_model(r.model).is_moe for r in rows)
    try:
        rank_models("rtx-4090", offload="experts", moe=False)
    except UserError as e:
        assert "MoE" in str(e)
    else:
        raise AssertionError("offload experts with dense models only must be refused")


def test_a_gguf_whose_tensors_disagree_with_its_metadata_is_one_line(tmp_path):
    """measure --backend torch on such a file died in a torch RuntimeError."""
    import pytest

    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    pytest.importorskip("torch")
    path = tmp_path / "liar.gguf"
    d, h, f, v = 64, 4, 128, 256
    w = gguf.GGUFWriter(str(path), "llama")
    for key, val in {"block_count": 1, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
                     "attention.head_count_kv": h, "context_length": 256}.items():
        w.add_uint32(f"llama.{key}", val)
    shapes = {"token_embd.weight": (v, d), "output_norm.weight": (d,), "output.weight": (v, d),
              "blk.0.attn_norm.weight": (d,), "blk.0.ffn_norm.weight": (d,), "blk.0.attn_q.weight": (d, d),
              "blk.0.attn_k.weight": (d // 2, d),             # the metadata says 4 KV heads of 16: 64 rows
              "blk.0.attn_v.weight": (d, d), "blk.0.attn_output.weight": (d, d), "blk.0.ffn_gate.weight": (f, d),
              "blk.0.ffn_up.weight": (f, d), "blk.0.ffn_down.weight": (d, f)}
    for name, shape in shapes.items():
        w.add_tensor(name, np.zeros(shape, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = one_line_exit_2(run_cli("measure", str(path), "--backend", "torch", "--hardware", "rtx-4090",
                                  "--context", "0", "--prompt", "8", "--gen", "5"))
    assert "blk.0.attn_k" in err and "32x64" in err
