"""Unfused attention reads each cached K/V head once per query head, the re-reads partly from the cache
(EngineProfile.kv_reread, Op.query_heads_per_kv): checked by hand from the formula, against the depth series
of the calibration file (llama.cpp Metal and CUDA, 2024-05 builds without -fa), and per engine era
(FlashAttention by default from 2025)."""

from dataclasses import replace

import pytest

from tokspeed.calibration import DEFAULT_CSV, load_rows
from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware
from tokspeed.predict import predict
from tokspeed.resolve import resolve_model
from tokspeed.engines.rates_stream import stream_bytes_s


def step_s(model, hw, engine, quant, depth):
    return predict(model, hw, quant=quant, engine=engine, prompt=0, gen=1, context=depth).decode.ms_per_token / 1e3


@pytest.mark.parametrize("engine,hw_id,version,fa,unfused", [("llama.cpp", "m2-ultra-76", "2024-05", None, True),
                                                             ("llama.cpp", "m2-ultra-76", "2025-10", None, False),
                                                             ("llama.cpp", "rtx-4090", "2024-05", None, True),
                                                             ("ollama", "m2-ultra-76", None, None, True),
                                                             ("ollama", "rtx-4090", None, None, True),
                                                             ("lm-studio", "m2-ultra-76", None, None, True),
                                                             # -fa on|off asked for
                                                             ("llama.cpp", "m2-ultra-76", "2025-10", False, True),
                                                             ("llama.cpp", "rtx-4090", None, False, True),
                                                             ("llama.cpp", "rtx-4090", "2024-05", True, False),
                                                             ("ollama", "m2-ultra-76", None, True, False)])
def test_depth_cost_by_hand(engine, hw_id, version, fa, unfused):
    # llama-3-8b: 32 layers, 32 query heads over 8 K/V heads of 128 values; F16 cache: K and V are
    # 2 x 8 x 128 x 2 B = 4,096 B per token per layer. Going from depth 0 to depth D adds, per step, D tokens
    # of cache read 1 + kv_reread x 3 times (the other 3 query heads of each group re-read it, the share
    # kv_reread from memory) at the engine's stream rate x eta_kv, and D scores per query head of 4 x 128 + 5
    # FLOPs whose unfused score traffic is attn_bytes_per_flop per FLOP (memory bound: ~1 FLOP/B).
    # ollama and LM Studio leave FlashAttention off by default (capabilities.toml): unfused attention on their
    # 2025 llama.cpp, with the score traffic and re-reads fitted on the 2024 era's rows; so does any 2025 build
    # run with -fa off. -fa on reads each K/V head once and writes no score matrix, in any era that has it.
    hw = get_hardware(hw_id)
    eng = get_engine(engine, hw, version=version, flash_attention=fa)
    assert (eng.kv_reread > 0) == unfused and eng.flash_attention == (not unfused)
    if unfused and (engine != "llama.cpp" or fa is False):   # the 2024 era: the newest without FlashAttention
        era = get_engine(get_engine("llama.cpp", hw).name, version="2024")
        assert (eng.kv_reread, eng.attn_bytes_per_flop) == (era.kv_reread, era.attn_bytes_per_flop) != (0, 0)
    if fa is True and version == "2024-05":     # an unfused era asked to run fused: the fused era's own traffic
        newest = get_engine(get_engine("llama.cpp", hw).name)
        assert eng.attn_bytes_per_flop == newest.attn_bytes_per_flop == 0.0   # CUDA's FlashAttention: none fitted
    reads = 1 + 3 * eng.kv_reread
    D = 8192
    stream = stream_bytes_s(eng, hw)
    kv = 32 * D * 4096 * reads / (stream * eng.eta_kv)
    scores = 32 * 32 * D * (4 * 128 + 5) * eng.attn_bytes_per_flop / stream
    dt = step_s("llama-3-8b", hw, eng, "Q4_K_M", D) - step_s("llama-3-8b", hw, eng, "Q4_K_M", 0)
    assert dt == pytest.approx(kv + scores, rel=1e-6)


def test_a_multi_head_model_reads_its_cache_once_either_way():
    # llama-2-7b has as many K/V heads as query heads: nothing to read twice
    spec = resolve_model("llama-2-7b")[0]
    assert spec.n_heads == spec.n_kv_heads
    hw = get_hardware("m2-ultra-76")
    old = get_engine("llama.cpp", hw, version="2024-05")
    once = replace(old, kv_reread=0.0)
    assert old.kv_reread > 0.9
    assert step_s("llama-2-7b", hw, old, "Q4_0", 4096) == pytest.approx(step_s("llama-2-7b", hw, once, "Q4_0", 4096))


def _measured(ids):
    rows = {r.id: r for r in load_rows(DEFAULT_CSV)}
    return [rows[i] for i in ids]


# XiongjieDai/GPU-Benchmarks-on-LLM-Inference, LLaMA-3 tables (2024-05 llama-bench, no -fa), Q4_K_M tg512 and
# tg8192: M2 Ultra 76-core (r1216/r1219 8B, r1232/r1235 70B), A100 80GB SXM4 (r0890/r0893 8B, r0906/r0909 70B)
@pytest.mark.parametrize("hw_id,model,ids,measured,margin", [
    ("m2-ultra-76", "llama-3-8b", ("r1216", "r1219"), 54.13 / 78.81, 0.1),
    ("m2-ultra-76", "llama-3-70b", ("r1232", "r1235"), 9.34 / 12.48, 0.1),
    ("a100-80g-sxm", "llama-3-8b", ("r0890", "r0893"), 115.92 / 135.04, 0.01),
    ("a100-80g-sxm", "llama-3-70b", ("r0906", "r0909"), 21.32 / 24.61, 0.01)])
def test_2024_decode_slows_with_depth_as_measured(hw_id, model, ids, measured, margin):
    a, b = _measured(ids)
    assert (a.model, a.gen, b.gen, a.era) == (model, 512, 8192, "2024")
    assert b.tok_s / a.tok_s == pytest.approx(measured)
    hw = get_hardware(hw_id)

    def tok_s(eng, gen):
        return predict(model, hw, quant="Q4_K_M", engine=eng, prompt=0, gen=gen).decode.tok_s

    eng = get_engine("llama.cpp", hw, version="2024-05")
    ratio = tok_s(eng, 8192) / tok_s(eng, 512)
    assert ratio == pytest.approx(measured, abs=0.065)
    # one read of the cache per K/V head (what FlashAttention does) says less slowing: further from the rows
    once = replace(eng, kv_reread=0.0)
    one_read = tok_s(once, 8192) / tok_s(once, 512)
    assert one_read > measured + margin and abs(ratio - measured) < abs(one_read - measured)


def test_eras_and_backends():
    # fitted, one share for the eras without FlashAttention: Metal's matrix-vector kernels stream a K/V head per
    # query head (~all re-reads reach memory), CUDA's L2 serves most of a group's re-reads
    for v in ("2023", "2024", "2024-05"):
        assert get_engine("llama.cpp-metal", version=v).kv_reread > 0.9
        assert 0.05 < get_engine("llama.cpp-cuda", version=v).kv_reread < 0.5
    # FlashAttention on by default (2025 era, -fa auto): each head read once, whatever era's values stand in
    # (Vulkan's newest fitted era is 2024)
    for engine in ("llama.cpp-metal", "llama.cpp-cuda", "llama.cpp-vulkan", "llama.cpp-rocm"):
        assert get_engine(engine).kv_reread == 0.0
        assert get_engine(engine, version="b6500").kv_reread == 0.0


def test_an_era_with_flashattention_reads_once_on_priors_alone(monkeypatch):
    # without fitted.toml an engine has one set of values for every era (Metal's prior: every re-read reaches
    # memory); the era asked for decides whether its attention is fused
    from tokspeed.engines import profile, tables

    priors = tables.load_table("priors.toml")
    for module in (tables, profile):          # the tables' reader, and the name predict's engine cache watches
        monkeypatch.setattr(module, "_tables", lambda: priors)
    assert get_engine("llama.cpp-metal", version="2024").kv_reread == 1.0
    assert get_engine("llama.cpp-metal", version="2025").kv_reread == 0.0
    assert get_engine("llama.cpp-metal", version="b6500").kv_reread == 0.0
    assert get_engine("llama.cpp-metal").kv_reread == 0.0


def test_fast_evaluator_reads_the_cache_per_query_head_too():
    np = pytest.importorskip("numpy")
    from tokspeed.calibration.evaluate import predicted_tok_s
    from tokspeed.calibration.fast import build, predict_rows

    for engine, ids in (("llama.cpp-metal", ("r1216", "r1219", "r1232", "r1235")),
                        ("llama.cpp-cuda", ("r0890", "r0893", "r0906", "r0909"))):    # a share of 1, and under 1
        rows = _measured(ids)
        assert {r.era for r in rows} == {"2024"} and {r.engine for r in rows} == {engine}
        prof = get_engine(engine, version="2024")
        fast = predict_rows(build(rows), prof)
        # the same profile through predict (a device's pooled profile, engines/pooling.py, is another profile)
        assert np.allclose(fast, [predicted_tok_s(r, prof) for r in rows], rtol=1e-9)


def test_explain_counts_and_says_the_reads_per_query_head():
    from tokspeed.explain import explain

    hw = get_hardware("m2-ultra-76")
    stages = {}
    for version in ("2024", "2025"):
        j = explain("llama-3-8b", hw, quant="Q4_K_M", context=8192, engine_version=version).journey.to_dict()
        stages[version] = next(s for s in j["stages"] if s["key"] == "attention")
    # the cache as predict counts it (once: 32 layers x 8,193 cached tokens, the step's own included, x 4,096 B
    # read, 1 token x 4,096 B written); the time holds the reads per query head, and the note says so
    read, write = 32 * 8193 * 4096, 32 * 4096
    for v in ("2024", "2025"):
        assert stages[v]["kv_bytes"] == pytest.approx(read + write)
    assert "100% of the re-reads from memory: 4x the cache" in stages["2024"]["note"]
    assert "query head" not in stages["2025"]["note"]
    assert stages["2024"]["seconds"] > 3 * stages["2025"]["seconds"]


def test_a_machine_calibration_holds_its_own_kv_reads():
    # `tokspeed measure --calibrate` fits eta_kv on its own run (llama-cpp-python leaves FlashAttention off):
    # whatever reads per query head that run made are inside it; counting them again would slow depth ~2x
    from tokspeed.hardware.spec import Hardware

    hw = Hardware(id="h", name="Apple M2 Ultra (76-core GPU)", kind="soc", vendor="Apple", memory_gb=192,
                  bandwidth_gbps=800.0, calibration={"llama.cpp": {"eta_mem": 0.8, "eta_kv": 0.6}})
    for engine, version in (("llama.cpp", "2024"), ("ollama", None), ("lm-studio", None)):
        eng = get_engine(engine, hw, version=version)
        # the KV cache at 0.6 of the 800 GB/s: eta_kv relative to the calibrated stream (0.8)
        assert eng.kv_reread == 0.0 and eng.eta_kv == pytest.approx(0.6 / 0.8), engine
        assert "this machine's calibration" in eng.source


def test_a_calibration_fitted_net_of_its_attention_keeps_the_engines_reads():
    # `measure --calibrate` now counts the attention traffic the engine model adds beyond one read of the cache
    # as KV bytes (attention_net): its eta_kv holds for either attention, so the profile keeps its re-reads and
    # score traffic; an older calibration (no such key) holds its run's reads in eta_kv, so they are not added
    from tokspeed.hardware.spec import Hardware

    def hw(net):
        entry = {"eta_mem": 0.8, "eta_kv": 0.6, "flash_attention": False, **({"attention_net": True} if net else {})}
        return Hardware(id="h", name="NVIDIA GeForce RTX 4090", kind="gpu", vendor="NVIDIA", memory_gb=24,
                        bandwidth_gbps=1008.0, calibration={"llama.cpp": entry})

    unfused = get_engine("llama.cpp", get_hardware("rtx-4090"), flash_attention=False)
    assert unfused.kv_reread > 0
    assert get_engine("llama.cpp", hw(True), flash_attention=False).kv_reread == unfused.kv_reread
    assert get_engine("llama.cpp", hw(False), flash_attention=False).kv_reread == 0.0
    assert get_engine("llama.cpp", hw(True)).kv_reread == 0.0          # fused: one read, calibrated or not


def test_an_old_metal_build_run_fused_keeps_the_fused_kernels_traffic():
    # Metal's FlashAttention kernel keeps some traffic of its own (fitted on the 2025 rows); a 2024 build asked to
    # run fused takes it, so it is never predicted with less attention traffic than the fused era itself
    hw = get_hardware("m2-ultra-76")
    fused_era = get_engine("llama.cpp", hw)
    old_fused = get_engine("llama.cpp", hw, version="2024-05", flash_attention=True)
    assert fused_era.attn_bytes_per_flop > 0
    assert old_fused.attn_bytes_per_flop == fused_era.attn_bytes_per_flop and old_fused.kv_reread == 0.0


def test_an_mla_latent_is_read_once():
    # DeepSeek's MLA caches one latent per token shared by every head: nothing to re-read per head
    spec = resolve_model("deepseek-v2-lite")[0]
    assert spec.is_mla
    hw = get_hardware("m2-ultra-76")
    old = get_engine("llama.cpp", hw, version="2024")
    once = replace(old, kv_reread=0.0)
    assert step_s("deepseek-v2-lite", hw, old, "Q4_K_M", 8192) == pytest.approx(
        step_s("deepseek-v2-lite", hw, once, "Q4_K_M", 8192))


@pytest.mark.parametrize("tp,per_rank", [(1, 4), (2, 4), (8, 4), (16, 2), (32, 1)])
def test_tensor_parallel_ranks_keep_their_own_group(tp, per_rank):
    # llama-3-8b: 32 query heads over 8 K/V heads. Up to tp = 8 each rank holds 32/tp query heads over 8/tp K/V
    # heads (4 each); past 8 a rank holds one replicated K/V head for 32/tp query heads
    from tokspeed.ledger import Role, forward_ops
    from tokspeed.quant.kv import kv_bytes
    from tokspeed.quant.schemes import scheme_for
    from tokspeed.scale.timing import _tp_shard

    spec = resolve_model("llama-3-8b")[0]
    ops = forward_ops(spec, scheme_for("F16", spec), kv_bytes("f16"), 1, 1, 4096)
    core = next(o for o in ops if o.role is Role.ATTN_CORE)
    assert _tp_shard(core, spec, tp).query_heads_per_kv == per_rank


def test_fused_2025_builds_drop_unfused_score_traffic_under_fa_auto():
    # ROCm, SYCL and Vulkan carry unfused attention's score traffic in their 2024 era (fitted since
    # calibration-3.csv; the unfused prior where a fit has no prefill rows to move it); a 2025 build runs -fa auto
    # on ROCm and Vulkan (capabilities.toml) and keeps the scores on chip; SYCL from the builds with its kernels
    # (2026-03). ollama leaves FlashAttention off on every backend.
    from tokspeed.engines.tables import load_table

    prior = {e: load_table("priors.toml")[e]["attn_bytes_per_flop"] for e in ("llama.cpp-rocm", "llama.cpp-sycl")}
    assert min(prior.values()) > 0
    rocm_2024 = get_engine("llama.cpp-rocm", version="2024").attn_bytes_per_flop
    assert rocm_2024 == pytest.approx(prior["llama.cpp-rocm"], rel=0.1)
    # fitted from 0 (fused) on the 2025 rows (calibration-3.csv's R9700 rows at 16-32K depth): it stays at about
    # 1 % of the unfused era's traffic, far from the unfused figure
    assert 0 <= get_engine("llama.cpp-rocm").attn_bytes_per_flop < rocm_2024 / 20
    # Vulkan's 2024 era ran attention unfused: it carries score traffic. Its 2025 era starts at 0 (fused) in the fit;
    # the two-R9700 layer splits at 16-32K depth once moved it above the 2024 era's figure (RDNA4's coopmat1
    # FlashAttention timed at coopmat2's rate). Since the coopmat1 share applies on every vendor
    # (backends.COOPMAT1_SHARE) the fused kernels' model holds that depth cost, and the fit leaves the 2025 era
    # little: well below the unfused era's score traffic
    vk_2025 = get_engine("llama.cpp-vulkan", version="b6500").attn_bytes_per_flop
    vk_2024 = get_engine("llama.cpp-vulkan", version="2024").attn_bytes_per_flop
    assert vk_2024 > 0 and vk_2025 < vk_2024 / 2
    # SYCL: unfused in its 2024 era and in 2025 builds before its FlashAttention kernels (b6500 = 2025-09; kernels from
    # 2026-03), each with the unfused era's score traffic (its prior: no prefill rows of that era moved it); fused in
    # today's build, with the newest era's fitted traffic (0: fitted from the fused start on the B70's -fa 1 rows)
    sycl = {v: get_engine("llama.cpp-sycl", version=v) for v in (None, "2024", "b6500", "2026-05")}
    for v in ("2024", "b6500"):
        assert sycl[v].flash_attention is False
        assert sycl[v].attn_bytes_per_flop == pytest.approx(prior["llama.cpp-sycl"], rel=0.1)
    for v in (None, "2026-05"):
        assert sycl[v].flash_attention is True and sycl[v].attn_bytes_per_flop < prior["llama.cpp-sycl"] / 20
    assert get_engine("ollama", get_hardware("mi300x")).attn_bytes_per_flop == rocm_2024


def test_measure_predicts_the_attention_its_llama_cpp_run_had():
    # llama-cpp-python leaves FlashAttention off unless asked: `tokspeed measure --backend llama.cpp` records
    # it and sets the unfused prediction beside the measured point (a CPU has no re-reads or score traffic)
    from tokspeed.measure.predicted import predict_point

    spec = resolve_model("llama-3-8b")[0]
    for hw_id, slower in (("m2-ultra-76", True), ("rtx-4090", True), ("ddr5-6000-2ch", False)):
        hw = get_hardware(hw_id)
        fused, unfused = (predict_point(spec, hw, "llama.cpp", "Q4_K_M", 8192, 16, 1, 128, None, fa)
                          for fa in (None, False))
        assert (unfused["tok_s"] < 0.95 * fused["tok_s"]) == slower, hw_id
        expect = predict(spec, hw, quant="Q4_K_M", engine="llama.cpp", flash_attention=False,
                         prompt=0, gen=16, context=8192).decode.tok_s
        assert unfused["tok_s"] == pytest.approx(expect) and "FlashAttention off" in unfused["engine"]


def test_the_llama_cpp_context_says_whether_it_runs_flashattention():
    from types import SimpleNamespace

    from tokspeed.measure.backend_llamacpp import LlamaModel

    def model(**params):
        return LlamaModel(SimpleNamespace(context_params=SimpleNamespace(**params)), None, "", {}, 1)

    assert model(flash_attn_type=0).flash_attention is False           # llama-cpp-python 0.3.x default
    assert model(flash_attn_type=1).flash_attention is True
    assert model(flash_attn_type=-1).flash_attention is True            # auto
    assert model(flash_attn=True).flash_attention is True                # older bindings
    assert model().flash_attention is False
