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
    from tokspeed.fit import rank_models
    from tokspeed.models.catalog import get_model

    rows = rank_models("rtx-4090", offload="experts", top=5)
    assert rows and all(get_model(r.model).is_moe for r in rows)
    try:
        rank_models("rtx-4090", offload="experts", moe=False)
    except UserError as e:
        assert "MoE" in str(e)
    else:
        raise AssertionError("offload experts with dense models only must be refused")
