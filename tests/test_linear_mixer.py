"""A hybrid model's linear-attention / SSM layer as llama.cpp's graph launches it (tokspeed/engines/linear_mixer.py):
the launches beyond the ledger's two operators, counted by hand from the graph code the module cites, by build
month (the fused ggml_gated_delta_net from GDN_FUSED_SINCE), and what they add to a llama.cpp answer's per-pass cost
(compat.runnable) and nothing to a server engine's."""

from dataclasses import replace

import pytest

from tokspeed.engines.compat import runnable, unmodelled_kernels
from tokspeed.engines.linear_mixer import GDN_FUSED_SINCE, layer_kernels, mixer_kernels
from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware
from tokspeed.resolve import resolve_model

LLAMA = {"linear_mixer": "ggml"}


def spec(name):
    return resolve_model(name)[0]


def test_gated_deltanet_layers_by_hand():
    nxt = spec("qwen3-next-80b-a3b")       # 36 GDN layers, 16 key heads < 32 value heads, one ssm_in (legacy split)
    # gates 4 + conv 5 + state gather 1 + L2 norms 2 + state copy 1 + gated norm 3 = 16; repeat of q, k 2;
    # matmuls ssm_in, ssm_beta_alpha, ssm_out 3 and the 8 copies splitting them: 29 + the delta rule
    assert layer_kernels(nxt, "2025-12") == 29 + 12          # build_delta_net_autoregressive: 12 launches
    assert layer_kernels(nxt, "2026-04") == 29 + 1           # ggml_gated_delta_net
    assert layer_kernels(nxt, "") == 29 + 1                  # today's build
    assert GDN_FUSED_SINCE == "2026-03"
    # beyond the ledger's 4 (projections 1, scan 3), over 36 layers
    assert mixer_kernels(LLAMA, nxt, "2025-12") == (41 - 4) * 36 == 1332
    assert mixer_kernels(LLAMA, nxt, "2026-03") == (30 - 4) * 36 == 936
    # ggml-cuda (CUDA, HIP) fuses ssm_conv + silu, softplus + mul and silu + mul in the builds with the fused rule
    assert layer_kernels(nxt, "2026-04", "ggml-cuda") == 29 + 1 - 3
    assert layer_kernels(nxt, "2025-12", "ggml-cuda") == 29 + 12
    q35 = spec("qwen3.5-9b")     # 24 GDN layers, 16 < 32 heads, five matmuls (wqkv, wqkv_gate, beta, alpha, out)
    # Qwen3.5's graph repeats q and k only without the fused rule (qwen35.cpp); Qwen3-Next's always (above)
    assert layer_kernels(q35) == 16 + 5 + 1 == 22
    assert layer_kernels(q35, "2025-12") == 16 + 5 + 12 + 2 == 35
    assert layer_kernels(q35, "", "ggml-cuda") == 22 - 3
    assert mixer_kernels(LLAMA, q35) == 18 * 24 == 432


def test_mamba2_layers_by_hand():
    nano = spec("nemotron-3-nano-30b-a3b")     # 23 Mamba-2 layers
    # conv 6, dt 2, ssm_scan 1, state copy 1, x*D + add 2, z cont + swiglu 2, grouped norm 1 = 15; ssm_in, ssm_out
    assert layer_kernels(nano, "2025-12") == layer_kernels(nano) == 17        # no build switch
    assert layer_kernels(nano, "", "ggml-cuda") == 17                        # none of its pairs fuse
    assert mixer_kernels(LLAMA, nano) == 13 * 23 == 299


def test_only_llama_cpp_graphs_and_only_hybrid_models():
    nxt = spec("qwen3-next-80b-a3b")
    assert mixer_kernels({}, nxt) == 0                                    # an engine without the ggml graph
    assert mixer_kernels(LLAMA, spec("llama-3.1-8b")) == 0                # no linear layers
    assert unmodelled_kernels("vllm", nxt, "BF16") == unmodelled_kernels("vllm", nxt, "BF16", "2025-12")
    for backend, fewer in (("llama.cpp-cuda", 14), ("llama.cpp-rocm", 14), ("llama.cpp-metal", 11),
                           ("llama.cpp-sycl", 11), ("llama.cpp-vulkan", 11), ("llama.cpp-cpu", 11)):
        # the engine's MoE dispatch is the same in both builds; the mixers differ by the 11 launches of the rule
        # (and ggml-cuda's 3 fused pairs)
        assert (unmodelled_kernels(backend, nxt, "Q4_K_M", "2025-12")
                - unmodelled_kernels(backend, nxt, "Q4_K_M", "2026-03")) == fewer * 36


def test_a_build_before_the_fused_rule_pays_its_launches_per_pass():
    hw, nxt = get_hardware("rtx-4090"), spec("qwen3-next-80b-a3b")
    eng = get_engine("llama.cpp-cuda", hw)
    new, _ = runnable(replace(eng, build_month="2026-04"), hw, "Q4_K_M", spec=nxt)
    old, _ = runnable(replace(eng, build_month="2025-12"), hw, "Q4_K_M", spec=nxt)
    assert old.fixed_s - new.fixed_s == pytest.approx(14 * 36 * eng.launch_s)
    assert new.fixed_s - eng.fixed_s > (27 - 4) * 36 * eng.launch_s    # today's mixers, the MoE dispatch on top


def test_explain_counts_them_among_the_launches_not_the_per_step_cost():
    from tokspeed.explain.journey import build_journey
    from tokspeed.predict import predict

    hw = get_hardware("rtx-4090")
    p = predict("qwen3-next-80b-a3b", hw, quant="Q4_K_M", engine="llama.cpp-cuda", prompt=0, gen=1,
                engine_version="b7300")
    j = build_journey(p)
    launch = next(st for st in j.stages if st.key == "launch")
    extra = unmodelled_kernels(p.engine_profile, p.spec, "Q4_K_M")
    assert extra > mixer_kernels({"linear_mixer": "ggml-cuda"}, p.spec, p.engine_profile.build_month) > 0
    # the per-step cost is the profile's own, before compat.runnable added the graph's launches to it
    assert j.fixed_s == pytest.approx(p.engine_profile.fixed_s - extra * p.engine_profile.launch_s, rel=1e-9)
    assert j.fixed_s == pytest.approx(get_engine("llama.cpp-cuda", hw, version="b7300").fixed_s, rel=1e-9)
    assert f"with {extra:,} the graph adds per pass" in launch.note


def _scan(spec_, n_tokens=1, batch=1):
    from tokspeed.ledger import Role, forward_ops
    from tokspeed.quant.schemes import scheme_for
    ops = forward_ops(spec_, scheme_for("Q4_K_M", spec_), 2.0, batch, n_tokens, 0)
    (op,) = [o for o in ops if o.role is Role.STATE_SCAN]
    return op


def test_the_graph_moves_the_state_around_the_rule_by_hand():
    # Qwen3-Next-80B: 36 GDN layers; a sequence's state per layer is the conv tail (4 - 1) x (2 x 16 x 128 + 32 x 128)
    # = 24,576 values and the recurrent matrix 32 x 128 x 128 = 524,288, F32: 2,195,456 bytes, 79,036,416 in all
    from tokspeed.engines.linear_mixer import GRAPH_STATE_PASSES, UNFUSED_RULE_PASSES, graph_state_bytes

    state = 36 * (3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 4
    assert state == 79_036_416
    op = _scan(spec("qwen3-next-80b-a3b"))
    assert op.state_bytes == state and op.act_bytes == 2 * state and op.state_rule == "gated_deltanet"
    # build_rs's gather (get_rows) and the copy back (cpy), a read and a write each: 4 passes on every build
    assert GRAPH_STATE_PASSES == 4 and graph_state_bytes(op, "ggml", "") == 4 * state
    # before the fused rule, build_delta_net_autoregressive's state-sized nodes read 8 and write 6 states where the
    # fused op reads and writes one each: 12 more
    assert UNFUSED_RULE_PASSES == 8 + 6 - 2
    assert graph_state_bytes(op, "ggml-cuda", "2025-12") == 16 * state == 1_264_582_656
    assert graph_state_bytes(op, "ggml", "2026-03") == 4 * state          # GDN_FUSED_SINCE
    assert graph_state_bytes(op, "", "2025-12") == 0.0                     # a server engine: none of llama.cpp's graph
    two = _scan(spec("qwen3-next-80b-a3b"), batch=2)
    assert graph_state_bytes(two, "ggml", "2025-12") == 16 * 2 * state     # one state per sequence
    # a prompt runs the chunked rule (its temporaries not counted) and a Mamba-2 layer ggml_ssm_scan: gather and copy
    prompt = _scan(spec("qwen3-next-80b-a3b"), n_tokens=512)
    assert prompt.state_rule == "gated_deltanet_chunk" and graph_state_bytes(prompt, "ggml", "2025-12") == 4 * state
    mamba = _scan(spec("nemotron-3-nano-30b-a3b"))
    assert mamba.state_rule == "mamba2" and graph_state_bytes(mamba, "ggml", "2025-12") == 4 * mamba.state_bytes
    # an operator that is not a scan moves nothing more
    from tokspeed.ledger import Role, forward_ops
    from tokspeed.quant.schemes import scheme_for
    nxt = spec("qwen3-next-80b-a3b")
    others = [o for o in forward_ops(nxt, scheme_for("Q4_K_M", nxt), 2.0, 1, 1, 0) if o.role is not Role.STATE_SCAN]
    assert all(graph_state_bytes(o, "ggml", "2025-12") == 0.0 for o in others)


def test_a_pass_times_those_bytes_at_the_streams_rate():
    # PassRates.parts: the scan's memory time grows by the graph's bytes over the pass's stream rate; a build before
    # the fused rule by 12 more passes than today's
    from tokspeed.engines.compat import mixer_graph
    from tokspeed.timing import PassRates

    hw = get_hardware("radeon-ai-pro-r9700")
    op = _scan(spec("qwen3-next-80b-a3b"))
    assert mixer_graph("llama.cpp-rocm") == "ggml-cuda" and mixer_graph("vllm") == ""
    old = PassRates(hw, replace(get_engine("llama.cpp-rocm", hw), build_month="2025-12"), "Q4_K_M", 1)
    new = PassRates(hw, replace(get_engine("llama.cpp-rocm", hw), build_month=""), "Q4_K_M", 1)
    t_old, t_new = old.parts(op)[1], new.parts(op)[1]
    assert old.bw == new.bw
    assert t_old - t_new == pytest.approx(12 * op.state_bytes / old.bw, rel=1e-12)
    assert t_new == pytest.approx((op.act_bytes + 4 * op.state_bytes) / new.bw, rel=1e-12)
