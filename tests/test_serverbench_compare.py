"""Measured vs predicted: the MBU arithmetic, checked by hand with a stand-in prediction."""

import pytest

from tokspeed.serverbench.compare import compare_phases

BYTES_PER_STEP = 4.58e9  # e.g. llama3.1:8b Q4_K_M weights read once per decode step


class FakePrediction:
    def __init__(self, batch):
        self.batch = batch

    def to_dict(self):
        bound = 1008e9 / BYTES_PER_STEP  # RTX 4090: 1,008 GB/s -> 220.1 steps/s
        return {"decode": {"tok_s": 0.8 * bound, "bound_tok_s": bound, "bytes_per_token": BYTES_PER_STEP},
                "prefill": {"seconds": 0.010}, "memory": {"max_batch": 64}}


@pytest.fixture
def fake_predict(monkeypatch):
    calls = []

    def predict(model, hardware, **kw):
        calls.append((model, hardware, kw))
        return FakePrediction(kw.get("batch", 1))

    import tokspeed.serverbench.compare as compare_mod

    monkeypatch.setattr(compare_mod, "predict", predict)      # the name compare_phases calls
    return calls


def summary(per_user):
    return {"phases": [
        {"phase": "c=1", "concurrency": 1, "rate_rps": None, "per_user_decode_tok_s": per_user, "output_tok_s": 100.0,
         "stats": {"prompt_tokens": {"mean": 127.6}, "output_tokens": {"mean": 256.0}}},
        {"phase": "c=4", "concurrency": 4, "rate_rps": None, "per_user_decode_tok_s": 50.0,
         "stats": {"target_prompt_tokens": {"mean": 100.0}, "output_tokens": {"mean": 64.0}}},
        {"phase": "rate=2", "concurrency": 64, "rate_rps": 2.0, "per_user_decode_tok_s": 90.0, "stats": {}},
    ]}


def test_mbu_is_measured_steps_times_bytes_over_bandwidth(fake_predict):
    out = compare_phases(summary(110.0), "llama-3-8b", "rtx-4090", quant="Q4_K_M")
    row, row4, rate = out["phases"]
    # 110 tok/s x 4.58 GB per step / 1008 GB/s = 0.49980...
    assert row["mbu"] == pytest.approx(110 * 4.58 / 1008)
    # batch 4: a step yields 4 tokens and reads 4 x bytes_per_token; 50 steps/s x 4 x 4.58 GB / 1008 GB/s
    assert row4["bytes_per_step"] == pytest.approx(4 * 4.58e9)
    assert row4["mbu"] == pytest.approx(50 * 4 * 4.58 / 1008)
    assert row["bound_tok_s"] == pytest.approx(1008 / 4.58)
    assert row["measured_over_predicted"] == pytest.approx(110 / (0.8 * 1008 / 4.58))
    assert [(m, kw) for m, _, kw in fake_predict][:2] == [
        ("llama-3-8b", {"quant": "Q4_K_M", "prompt": 128, "gen": 256, "batch": 1}),
        ("llama-3-8b", {"quant": "Q4_K_M", "prompt": 100, "gen": 64, "batch": 4}),  # target prompt: no usage
    ]
    # aggregate output = batch x per-sequence tok/s (the serving model's batch curve)
    assert row4["predicted_output_tok_s"] == pytest.approx(4 * 0.8 * 1008 / 4.58)
    # the rate phase (no lengths recorded: 1-token prompt and output): the simulated scheduler at 2 req/s;
    # each request is one 10 ms prefill step, 0.5 s apart, so they never meet: stable, rate x output tokens
    # = 2 tok/s, and a user decodes alone, one step of batch 1: 0.8 x 1008/4.58 tok/s
    assert rate["stable"] and rate["predicted_output_tok_s"] == pytest.approx(2.0)
    assert rate["predicted_tok_s"] == pytest.approx(0.8 * 1008 / 4.58)
    assert fake_predict[0][1].id == "rtx-4090"
    assert out["hardware"] == "rtx-4090"


def test_unknown_hardware_is_a_user_error(fake_predict):
    from tokspeed.errors import UserError

    with pytest.raises(UserError):
        compare_phases(summary(1.0), "llama-3-8b", "no-such-gpu")


def test_bench_server_puts_the_prediction_in_the_summary(fake_predict, tmp_path, capsys):
    import json

    from serverbench_fake import FakeServer
    from tokspeed.cli.main import main

    with FakeServer() as s:
        rc = main(["bench-server", s.url, "--model", "ok", "--requests", "2", "--warmup", "0",
                   "--hardware", "rtx-4090", "--predict-model", "llama-3-8b", "--quant", "Q4_K_M",
                   "-o", str(tmp_path / "r"), "--quiet"])
    assert rc == 0
    assert "measured vs tokspeed prediction" in capsys.readouterr().out
    pred = json.loads((tmp_path / "r" / "summary.json").read_text())["prediction"]
    assert pred["model"] == "llama-3-8b" and pred["phases"][0]["mbu"] > 0
    assert fake_predict[0][0] == "llama-3-8b" and fake_predict[0][2]["batch"] == 1


def test_with_tokspeeds_own_prediction(tmp_path):
    """Real predict: Llama 3 8B FP16 reads ~15.0 GB of weights per decode step whatever the batch
    (PRODUCT.md: the lookup reads one embedding row, so 15.0 GB, not 16.1 GB), plus a little KV."""
    from serverbench_fake import FakeServer
    from tokspeed.cli.main import main
    import json

    with FakeServer() as s:
        rc = main(["bench-server", s.url, "--model", "ok", "--requests", "2", "--warmup", "0", "--concurrency", "1,2",
                   "--hardware", "rtx-4090", "--predict-model", "llama-3-8b", "--quant", "F16",
                   "-o", str(tmp_path / "r"), "--quiet", "--json"])
    assert rc == 0
    pred = json.loads((tmp_path / "r" / "summary.json").read_text())["prediction"]
    assert [r["concurrency"] for r in pred["phases"]] == [1, 2]
    for r in pred["phases"]:
        assert 15.0e9 < r["bytes_per_step"] < 15.1e9
        assert r["bound_tok_s"] == pytest.approx(1008e9 / r["bytes_per_step"], rel=0.01)
        assert r["mbu"] == pytest.approx(r["measured_tok_s"] * r["bytes_per_step"] / 1008e9)
