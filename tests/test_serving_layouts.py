"""Serving layouts by hand: expert parallelism's all-to-all, attention data parallelism's KV pool,
disaggregation's KV transfer, speculative decoding's tokens per step (tokspeed.serving)."""

from types import SimpleNamespace

import pytest

from tokspeed.errors import UserError
from tokspeed.serving.expert import deepep_exchange_s, moe_exchange_s
from tokspeed.serving.requests import Arrivals, lengths, make_requests
from tokspeed.serving.run import kv_transfer_s
from tokspeed.serving.schedulers import Scheduler
from tokspeed.serving.search import frontier, layouts
from tokspeed.serving.simulate import simulate
from tokspeed.serving.speculative import Speculation, tokens_per_step
from tokspeed.serving.worker import Parallelism
from tokspeed.serving_api import make_setup


def test_moe_exchange_by_hand():
    # DeepSeek-V3-like: 58 MoE layers, top-8, d_model 7168; 256 tokens over 8 GPUs of switched NVLink 4
    # (450 GB/s per direction x 0.78 NCCL bus efficiency = 351 GB/s; NCCL LL: 6.6 us + 0.6 us a step).
    # All-gather of the BF16 hidden states then reduce-scatter of the outputs, each 7/8 x 256 x 7168 x 2 bytes
    # received per GPU over 7 steps: 2 x (6.6 us + 7 x 0.6 us + 7/8 x 3.67 MB / 351 GB/s) per layer.
    spec = SimpleNamespace(n_active_experts=8, d_model=7168, n_moe_layers=58)
    link = SimpleNamespace(per_direction_bytes_s=450e9, kind="scale-up")
    m = 256 * 7168 * 2
    per_layer = 2 * (6.6e-6 + 7 * 0.6e-6 + 7 / 8 * m / 351e9)
    assert moe_exchange_s(spec, link, 256, 8) == pytest.approx(58 * per_layer)
    assert moe_exchange_s(spec, link, 256, 1) == 0.0
    # DeepEP normal kernels: each GPU sends its 32 tokens' 8 copies, FP8 out and BF16 back, at 0.96 of 450 GB/s
    copies = 32 * 8 * 7168
    deepep = 2 * 6.6e-6 + 7 / 8 * copies * (1 + 2) / (450e9 * 0.96)
    assert deepep_exchange_s(spec, link, 256, 8) == pytest.approx(58 * deepep)


def test_attention_dp_multiplies_an_mla_kv_pool():
    s = make_setup("deepseek-v3", "h200-sxm", "sglang", quant="FP8", kv_dtype="fp8", isl=1000, osl=1000)
    tp8 = s.worker(Parallelism(tp=8))[0]
    dep8 = s.worker(Parallelism(tp=1, ep=8, dp=8))[0]
    # MLA's latent is whole on every TP rank: TP8 holds each token 8 times, attention-DP once. But DP keeps
    # all ~17.5 GB of non-expert weights (671B - 58 layers x 256 experts x 3 x 7168 x 2048 = 17.5B, FP8) on
    # every GPU instead of 1/8: 0.88 x 141 GiB (151.4 GB) - 84 GB ~ 49 GB free under TP8 becomes ~34 GB: 8 x 34/49 ~ 5.5
    assert 4 < dep8.kv_tokens / tp8.kv_tokens < 6
    assert dep8.weights_per_gpu - tp8.weights_per_gpu == pytest.approx(17.5e9 * 7 / 8, rel=0.1)
    assert dep8.gpus == tp8.gpus == 8


def test_parallelism_checks():
    with pytest.raises(UserError):
        Parallelism(tp=2, dp=2)              # dp needs ep = tp x dp
    with pytest.raises(UserError):
        Parallelism(tp=4, ep=6)
    assert Parallelism(tp=2, ep=8, dp=4).gpus == 8
    with pytest.raises(UserError):
        make_setup("llama-3.1-8b", "h100-sxm", "vllm").worker(Parallelism(tp=1, ep=2, dp=2))   # dense model


def test_kv_transfer_by_hand():
    s = make_setup("llama-3.1-8b", "h100-sxm", "vllm", quant="F16")
    r = s.group(1, 1)
    # 1000 tokens x 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes over H100 NVLink (900 GB/s bidirectional)
    assert kv_transfer_s(s, r, 1000, 2) == pytest.approx(1000 * 131072 / 450e9)


def test_tokens_per_step_by_hand():
    assert tokens_per_step(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
    assert tokens_per_step(0.0, 3) == 1.0
    assert Speculation("mtp", 1).acceptance_for("deepseek-v3") == 0.85
    with pytest.raises(UserError):
        Speculation("mtp", 1).acceptance_for("llama-3.1-8b")     # nothing published: must be given


class Fixed:
    def step(self, b, c, kv, pairs):
        return 0.01


def test_speculation_halves_decode_steps():
    # two tokens per step: the 10 tokens after the first take 5 steps, not 10
    sched = Scheduler("t", 8192, 64, 0.9, True, 0.0)
    reqs = make_requests(Arrivals("offline", 1), lengths(1, 100, 11))
    out = simulate(Fixed(), sched, float("inf"), reqs, tokens_per_step=2.0, rows_per_seq=2)
    assert out.requests[0][2] == pytest.approx(0.01 * 6)


def test_layouts_of_eight_gpus():
    dense = SimpleNamespace(n_heads=64, n_layers=80, is_moe=False)
    got = layouts(dense, 8, disagg=False)
    assert {(p.tp, p.pp, r) for p, r, _ in got} >= {(1, 1, 8), (2, 1, 4), (4, 1, 2), (8, 1, 1), (4, 2, 1)}
    moe = SimpleNamespace(n_heads=128, n_layers=61, is_moe=True)
    eps = {(p.tp, p.ep, p.dp) for p, _, _ in layouts(moe, 8, disagg=False) if p.ep > 1}
    assert (1, 8, 8) in eps and (8, 8, 1) in eps
    dis = [d for _, _, d in layouts(dense, 8) if d is not None]
    assert all(d.gpus == 8 for d in dis) and any((d.prefill_workers, d.decode_tp) == (6, 2) for d in dis)


def test_frontier_keeps_undominated_points():
    rows = [SimpleNamespace(output_tok_s_per_gpu=g, tok_s_per_user=u)
            for g, u in ((100, 10), (80, 20), (90, 5), (50, 30), (40, 25))]
    assert [p.to_dict() for p in frontier(rows)] == [
        {"tok_s_per_gpu": 100, "tok_s_per_user": 10}, {"tok_s_per_gpu": 80, "tok_s_per_user": 20},
        {"tok_s_per_gpu": 50, "tok_s_per_user": 30}]


def test_fitted_constants_by_engine_and_vendor(tmp_path, monkeypatch):
    from tokspeed.serving import fitted

    f = tmp_path / "fit.toml"
    f.write_text('["vllm@amd"]\ngpu_scale = 1.5\nstep_s = 0.001\n\n["sglang"]\ngpu_scale = 1.2\nstep_s = 0.0\n'
                 'link_scale = 2\n')
    monkeypatch.setattr(fitted, "FILE", f)
    fitted.reload()
    try:
        assert fitted.fitted_for("vllm", "AMD") == {"gpu_scale": 1.5, "step_s": 0.001, "link_scale": 1.0,
                                                    "lead_tokens": 0.0}
        assert fitted.fitted_for("vllm", "NVIDIA") == fitted.NEUTRAL         # no CUDA rows: the roofline alone
        assert fitted.fitted_for("sglang", "NVIDIA")["link_scale"] == 2.0    # the engine-wide entry
        f.write_text('["serving@nvidia"]\ngpu_scale = 0.9\nstep_s = 0.0005\nlink_scale = 1\n')
        fitted.reload()
        assert fitted.fitted_for("vllm", "NVIDIA") == {"gpu_scale": 0.9, "step_s": 0.0005, "link_scale": 1.0,
                                                       "lead_tokens": 0.0}
        assert fitted.fitted_for("tensorrt-llm", "NVIDIA")["gpu_scale"] == 0.9     # shared by the server engines
        assert fitted.fitted_for("llama.cpp-cuda", "NVIDIA") == fitted.NEUTRAL    # not a server engine
    finally:
        monkeypatch.undo()
        fitted.reload()


def test_attention_dp_step_reads_by_hand(monkeypatch):
    # One DeepSeek-V3 decode step at DP8 + EP8, 256 sequences (32 per attention rank): each GPU runs
    # attention on its own 32 rows, reading ALL non-expert weights (671B - 58 x 256 x 3 x 7168 x 2048 =
    # 17.0B, FP8) once, and the experts of all 256 tokens that land on it: 256 x (1 - (1 - 8/256)^256)
    # = 255.9 experts touched per layer, 1/8 of them per GPU, 3 x 7168 x 2048 bytes each, 58 layers = 81.7 GB.
    # Nothing is read twice: neither the batch (32, not 256) nor the experts (1/8, not all).
    import tokspeed.serving.expert as expert
    from tokspeed.serving.steptime import StepCost

    s = make_setup("deepseek-v3", "h200-sxm", "sglang", quant="FP8", kv_dtype="fp8", isl=1000, osl=1000)
    r = s.group(1, 1)
    seen = {}

    def timer(ops, prof, batch, n):
        seen["attn"] = (batch, sum(o.weight_bytes for o in ops))
        return SimpleNamespace(seconds=0.0, link_s=0.0)

    def pass_time(ops, hw, prof, quant, tokens, memo):
        seen["experts"] = (tokens, sum(o.weight_bytes for o in ops))
        return SimpleNamespace(seconds=prof.fixed_s)

    monkeypatch.setattr(expert, "pass_time", pass_time)
    time_ops = expert.expert_time_ops(SimpleNamespace(**{**vars(r), "timer": timer}), Parallelism(tp=1, ep=8, dp=8))
    cost = StepCost(r.spec, r.storage, r.kv_elem_bytes, time_ops)
    time_ops(cost._depth_free(256, 1), 256, 1)
    rows, attn_bytes = seen["attn"]
    tokens, expert_bytes = seen["experts"]
    assert rows == 32 and tokens == 256
    assert attn_bytes == pytest.approx(671e9 - 58 * 256 * 3 * 7168 * 2048, rel=0.05)
    touched = 256 * (1 - (1 - 8 / 256) ** 256)
    assert expert_bytes == pytest.approx(58 * touched / 8 * 3 * 7168 * 2048, rel=0.02)


def _link_only(monkeypatch, par, link_s):
    """The link time a DeepSeek-V3 worker under ``par`` charges for a 256-row decode pass when the attention
    group's timer reports ``link_s`` of TP all-reduces and every operator takes no time."""
    import tokspeed.serving.expert as expert
    from tokspeed.serving.steptime import StepCost

    s = make_setup("deepseek-v3", "h200-sxm", "sglang", quant="FP8", kv_dtype="fp8", isl=1000, osl=1000)
    r = s.group(1, 1)
    timer = lambda ops, prof, batch, n: SimpleNamespace(seconds=link_s, link_s=link_s)    # noqa: E731
    monkeypatch.setattr(expert, "pass_time", lambda ops, hw, prof, q, t, m: SimpleNamespace(seconds=prof.fixed_s))
    time_ops = expert.expert_time_ops(SimpleNamespace(**{**vars(r), "timer": timer, "setup": None}), par)
    cost = StepCost(r.spec, r.storage, r.kv_elem_bytes, time_ops)
    return time_ops(cost._depth_free(256, 1), 256, 1)


def test_tp_ep_combines_experts_by_the_tp_all_reduce(monkeypatch):
    # TP8 + EP8: after attention's all-reduce every rank holds all 256 tokens; each runs its own experts and
    # the MLP's all-reduce sums the layer (vLLM: all-to-all kernels only with dp_size > 1). The worker pays
    # the timer's all-reduces (here 1 ms) and no all-to-all
    assert _link_only(monkeypatch, Parallelism(tp=8, ep=8), 1e-3) == pytest.approx(1e-3)


def test_attention_dp_trades_the_moe_all_reduce_for_the_all_to_all(monkeypatch):
    # TP2 x DP4 + EP8 over NVLink (H200: 450 GB/s a direction): attention keeps its all-reduce on all 61
    # layers, the 58 MoE layers lose their MLP all-reduce: of 2 x 61 = 122 all-reduces (1 ms), 64 remain.
    # Each MoE layer all-gathers the 256 tokens' BF16 hidden states to every GPU and reduce-scatters the
    # outputs: 7/8 x 256 x 7,168 x 2 bytes received per GPU in each, at 450 GB/s x 0.78 (NCCL's bus
    # efficiency), plus NCCL's LL latency over 7 steps: 6.6 + 7 x 0.6 us, twice
    a2a = 58 * 2 * (6.6e-6 + 7 * 0.6e-6 + 7 / 8 * 256 * 7168 * 2 / (450e9 * 0.78))
    got = _link_only(monkeypatch, Parallelism(tp=2, ep=8, dp=4), 1e-3)
    assert got == pytest.approx(1e-3 * 64 / 122 + a2a)


def test_sglang_attention_dp_before_deepep_is_not_modelled():
    # SGLang 0.4.5 is the first release with DeepEP; before it attention DP gathered every rank's tokens for
    # TP-sharded experts: such a configuration carries the warning, a row of it is not scored
    from tokspeed.serving.rows import load_cases
    from tokspeed.serving.engine_versions import version_tuple
    from tokspeed.serving.unmodelled import SGLANG_DP_BEFORE_DEEPEP, not_modelled

    dp8 = Parallelism(tp=1, ep=8, dp=8)
    assert version_tuple("0.5.5.post3") == (0, 5, 5) and version_tuple("v0.4.1") == (0, 4, 1)
    assert not_modelled("sglang", "0.4.1", dp8) == [SGLANG_DP_BEFORE_DEEPEP]
    assert not_modelled("sglang", "0.4.5", dp8) == not_modelled("sglang", "0.4.1", Parallelism(tp=8)) == []
    assert not_modelled("sglang", None, dp8) == not_modelled("vllm", "0.4.1", dp8) == []
    s = make_setup("deepseek-v3", "h200-sxm", "sglang", quant="FP8", kv_dtype="fp8", isl=256, osl=64, engine_version="0.4.1")
    from tokspeed.serving.run import Load, evaluate
    cfg = evaluate(s, dp8, 1, Load("concurrency", concurrency=8, n_requests=8))
    assert "DeepEP" in cfg.warnings[0]
    _, skipped = load_cases()
    assert skipped[f"not modelled ({SGLANG_DP_BEFORE_DEEPEP})"] == 8     # datacrunch's eight v0.4.1 rows


def test_chunked_layer_keys_by_hand():
    """Llama 4's chunked attention (window W = 8,192): a row reads the tokens of its current chunk."""
    from tokspeed.serving.steptime import windowed_keys

    W = 8192
    assert windowed_keys(1, 10_000, W, True) == 10_000 - W             # one row 1,808 tokens into its second chunk
    assert windowed_keys(4, 4 * 3_000, W, True) == 4 * 3_000           # every row still in its first chunk
    assert windowed_keys(2, 2 * W, W, True) == 2 * W / 2              # rows at W - 1 and W + 1: half a chunk each
    assert windowed_keys(2, 2 * 20_000, W, False) == 2 * W            # sliding: at most the window each
