"""ggml-cuda's changes inside llama.cpp's 2024 era (tokspeed/engines/era_builds.py, capabilities.toml within_era): CUDA graphs from 2024-06 builds
on Ampere and later, MMQ on INT8 tensor cores from 2024-07 builds; checked against the month rules and the
tables' values by hand."""

import math
from dataclasses import replace

from tokspeed.calibration.evaluate import predicted
from tokspeed.calibration.rows import load_rows
from tokspeed.engines.era_builds import at_build, changes_of, replays_graphs, with_row_attention
from tokspeed.engines.profile import get_engine, prior_profile
from tokspeed.engines.tables import engine_entry
from tokspeed.explain.journey import build_journey
from tokspeed.hardware.catalog import get_hardware
from tokspeed.predict import predict

RTX_4090 = get_hardware("rtx-4090")


class Arch:
    def __init__(self, arch):
        self.arch = arch


def test_graphs_replay_from_2024_06_builds_on_ampere_and_later_only():
    since = changes_of("llama.cpp-cuda")["graphs"]
    assert since == "2024-06"                                     # the month after PR #6766's
    assert not replays_graphs("2024-05", Arch("ada"), since)     # the month of the merge: its builds may predate it
    assert replays_graphs("2024-06", Arch("ada"), since)
    assert replays_graphs("", Arch("blackwell"), since)          # today's build
    assert not replays_graphs("2025-08", Arch("turing"), since)  # cc < 8.0: disable_due_to_gpu_arch
    assert not replays_graphs("2024-11", Arch("pascal"), since)
    assert replays_graphs("2024-11", Arch(None), since)          # an unknown part: as the era's rows ran
    assert not replays_graphs("2024-11", Arch("ada"), "")        # an engine without the change


def test_only_cudas_builds_changed_inside_an_era():
    assert changes_of("llama.cpp-cuda") == {"graphs": "2024-06", "int8_mmq": "2024-07"}
    assert changes_of("llama.cpp-vulkan") == changes_of("llama.cpp-rocm") == changes_of("no-such-engine") == {}


def test_an_older_eras_profile_takes_the_newest_eras_costs_for_the_paths_its_build_ran():
    turing = replace(RTX_4090, arch="turing")
    old = replace(prior_profile("llama.cpp-cuda"), version="2024", launch_s=5e-6, quant_flops_per_core_cycle=0.0,
                  fitted=True, eta_compute={"default": 0.4}, eta_compute_format={"kquant": 0.9})
    new = replace(old, version="2025", launch_s=1.8e-6, quant_flops_per_core_cycle=800.0, eta_compute={"default": 0.5},
                  eta_compute_format={"kquant": 0.8, "legacy": 1.2})
    eras = {"2025": new, "2024": old}
    got = at_build(replace(old, build_month="2024-11"), RTX_4090, eras)
    assert (got.launch_s, got.quant_flops_per_core_cycle) == (1.8e-6, 800.0)
    # the quantized matmuls at the MMQ kernel's efficiency (0.5 x 0.8, 0.5 x 1.2, 0.5 x 1), the era's 0.4 kept
    eff = {g: got.compute_eff_for(RTX_4090) * got.compute_format_eff(q) for g, q in
           (("kquant", "Q4_K_M"), ("legacy", "Q4_0"), ("q8", "Q8_0"))}
    assert all(math.isclose(eff[g], v) for g, v in (("kquant", 0.4), ("legacy", 0.6), ("q8", 0.5)))
    assert got.compute_eff_for(RTX_4090) == 0.4 and got.compute_format_eff("F16") == 1.0
    got = at_build(replace(old, build_month="2024-06"), RTX_4090, eras)      # graphs, not yet INT8 MMQ
    assert (got.launch_s, got.quant_flops_per_core_cycle, got.eta_compute_format) == (1.8e-6, 0.0, {"kquant": 0.9})
    got = at_build(replace(old, build_month="2024-11"), turing, eras)         # INT8 MMQ, no graphs before Ampere
    assert (got.launch_s, got.quant_flops_per_core_cycle) == (5e-6, 800.0)
    same = replace(old, build_month="2024-05")
    assert at_build(same, RTX_4090, eras) is same                              # before both
    newest = replace(new, build_month="2025-06")
    assert at_build(newest, RTX_4090, eras) is newest                          # the newest era is its own
    priors = replace(old, build_month="2024-11", fitted=False)
    assert at_build(priors, RTX_4090) is priors                                # the priors keep their costs
    vulkan = replace(old, name="llama.cpp-vulkan", build_month="2024-11")
    assert at_build(vulkan, RTX_4090, eras) is vulkan


def test_a_late_2024_build_decodes_faster_by_its_kernels_times_the_two_eras_launch_gap():
    # the same pass (llama-2-7b Q4_0: 516 kernels, as explain counts them) one kernel gap apart: the tables' own
    # fitted per-kernel costs of the 2024 era (host launches) and the newest (graph replay)
    old, new = (engine_entry("llama.cpp-cuda", v)[0]["launch_s"] for v in ("2024", "2025"))
    kw = dict(quant="Q4_0", engine="llama.cpp-cuda", prompt=0, gen=1, context=0)
    before = predict("llama-2-7b", RTX_4090, engine_version="2024-05", **kw)
    after = predict("llama-2-7b", RTX_4090, engine_version="2024-11", **kw)
    assert build_journey(before).kernels == build_journey(after).kernels == 516
    assert math.isclose(1 / before.decode.tok_s - 1 / after.decode.tok_s, 516 * (old - new), rel_tol=0.01)


def test_the_int8_mmq_pr_speeds_a_4090s_k_quant_prompt_as_its_own_table_shows():
    # calibration rows h0046 / h0047 (llama.cpp PR #7860): 5,611 -> 9,279 tok/s, 1.65x; the month before the
    # change and the month after, on the same fitted 2024 era
    kw = dict(quant="Q4_K_S", engine="llama.cpp-cuda", prompt=2048, gen=0, context=0)
    a = predict("llama-3-8b", RTX_4090, engine_version="2024-06", **kw).prefill.tok_s
    b = predict("llama-3-8b", RTX_4090, engine_version="2024-07", **kw).prefill.tok_s
    assert 1.05 < b / a < 2.0
    engine = get_engine("llama.cpp-cuda", RTX_4090, version="2024-07")
    assert engine.quant_flops_per_core_cycle == engine_entry("llama.cpp-cuda", "2025")[0]["quant_flops_per_core_cycle"]


def test_explain_says_why_a_late_2024_build_pays_the_newest_eras_kernel_cost():
    kw = dict(quant="Q4_0", engine="llama.cpp-cuda", prompt=0, gen=1, context=0)
    late = build_journey(predict("llama-2-7b", RTX_4090, engine_version="2024-11", **kw))
    early = build_journey(predict("llama-2-7b", RTX_4090, engine_version="2024-05", **kw))
    note = next(s.note for s in late.stages if s.note.startswith("516 kernels per pass"))
    assert "2024-11 build replays CUDA graphs" in note and "2025 era's per-kernel cost" in note
    assert not any("CUDA graphs" in s.note for s in early.stages)



def test_a_row_runs_attention_as_its_flags_state():
    unfused = replace(prior_profile("llama.cpp-cuda"), version="2024", build_month="2024-11", fitted=True,
                      flash_attention=False, kv_reread=0.23, attn_bytes_per_flop=0.049)
    fused = replace(unfused, version="2025", build_month="2025-08", flash_attention=True, kv_reread=0.0,
                    attn_bytes_per_flop=0.0)
    eras = {"2025": fused, "2024": unfused}
    # -fa 1 on a 2024 build: one read of each K/V head, the fused era's score traffic (none on CUDA)
    got = with_row_attention(unfused, True, eras)
    assert (got.flash_attention, got.kv_reread, got.attn_bytes_per_flop) == (True, 0.0, 0.0)
    # -fa 0 on a 2025 build: the newest unfused era's share and traffic
    got = with_row_attention(fused, False, eras)
    assert (got.flash_attention, got.kv_reread, got.attn_bytes_per_flop) == (False, 0.23, 0.049)
    assert with_row_attention(unfused, None, eras) is unfused                   # the flags say nothing
    assert with_row_attention(unfused, False, eras) is unfused                  # what the era runs anyway
    early = replace(unfused, version="2023", build_month="2023-11")
    assert with_row_attention(early, True, eras) is early                        # no -fa before 2024-04 builds
    # ggml-sycl's FlashAttention kernels: from 2026-03 builds (eras.toml backend_flash_attention_since); a -fa 1 row of
    # 2026-05 runs them (one read of each K/V head), one of 2025-11 ran its attention unfused whatever its flags said
    sycl = replace(prior_profile("llama.cpp-sycl"), version="2025", build_month="2026-05", flash_attention=False)
    got = with_row_attention(sycl, True)
    assert (got.flash_attention, got.kv_reread) == (True, 0.0)
    older = replace(sycl, build_month="2025-11")
    assert with_row_attention(older, True) is older


def test_the_calibration_rows_run_the_fa_their_flags_state():
    rows = {r.id: r for r in load_rows() if r.id in ("c3-0239", "r0203")}
    assert rows["c3-0239"].flash_attention is True and rows["c3-0239"].era == "2024"   # a 2024 build with -fa 1
    assert predicted(rows["c3-0239"]).engine_profile.flash_attention is True
    assert predicted(rows["r0203"]).engine_profile.flash_attention is True           # 2025: on by default
