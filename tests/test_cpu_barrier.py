"""A CPU engine's threads meet at a barrier after every graph node (priors.toml [BARRIER]): each node costs
the device's llama.cpp thread count x a contended cache-line transfer, which matters on many-core servers
and not on a desktop."""

from dataclasses import replace

import pytest

import tokspeed
from tokspeed.errors import UserError
from tokspeed.engines.profile import get_engine
from tokspeed.explain.journey import build_journey
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.spec import Hardware

SYNC = 60e-9      # priors.toml llama.cpp-cpu sync_s_per_thread
# Genoa's 96 Zen 4 threads span 12 eight-core CCDs: 11/12 of the arrivals take the line from another CCD (~100 ns
# instead of ~30 inside one): (30 + 11/12 x 70) / 30 = 3.14 x the prior's per-thread cost
GENOA = 96 * SYNC * (30 + 11 / 12 * 70) / 30


def decode_ms(hw, model="llama-3.1-8b", quant="Q4_K_M", engine="llama.cpp"):
    p = tokspeed.predict(model, hw, quant=quant, engine=engine, prompt=0, gen=16)
    return p, p.decode.ms_per_token


def test_the_prior_is_sixty_ns_per_thread():
    assert get_engine("llama.cpp-cpu").sync_s_per_thread == SYNC
    assert get_engine("llama.cpp-cuda").sync_s_per_thread == 0.0      # GPU engines launch kernels instead


def test_threads_are_llama_cpps_default_count():
    # physical cores of the processor the catalog row assumes (EPYC 9654: 96; Xeon 8480+: 56; Ryzen 7 7700X:
    # 8); on Apple silicon the performance cores (M4 Max 16-CPU: 12 P + 4 E)
    assert get_hardware("epyc-genoa-ddr5-4800-12ch").cpu_threads == 96
    assert get_hardware("xeon-spr-ddr5-4800-8ch").cpu_threads == 56
    assert get_hardware("ddr5-6000-2ch").cpu_threads == 8
    assert get_hardware("m4-max-40").cpu_threads == 12
    assert get_hardware("rtx-4090").cpu_threads == 0


def test_each_graph_node_costs_threads_times_the_line_transfer():
    genoa = get_hardware("epyc-genoa-ddr5-4800-12ch")
    p, ms = decode_ms(genoa)
    assert p.engine == "llama.cpp-cpu"
    assert p.engine_profile.launch_s == pytest.approx(GENOA, rel=1e-12)      # 18.1 us per node
    nodes = next(st for st in build_journey(p).stages if st.key == "launch").kernels
    # the ledger's kernels of a 32-layer Llama: the per-layer count times 32, plus the embedding, final norm
    # and LM head: the explain table lists them (516 for llama-3.1-8b)
    assert nodes == 516
    _, ms0 = decode_ms(replace(genoa, cpu_threads=0))                             # thread count unknown: no term
    assert ms - ms0 == pytest.approx(nodes * GENOA * 1e3, rel=1e-9)


def test_it_matters_on_a_many_core_server_and_not_on_a_desktop():
    for hw_id, lo, hi in (("epyc-genoa-ddr5-4800-12ch", 0.10, 0.5), ("ddr5-6000-2ch", 0.0, 0.02)):
        hw = get_hardware(hw_id)
        p, ms = decode_ms(hw)
        _, ms0 = decode_ms(replace(hw, cpu_threads=0))
        assert lo < (ms - ms0) / ms < hi, hw_id


def test_a_socs_cpu_cluster_syncs_its_p_cores_and_its_gpu_engine_does_not():
    m4 = get_hardware("m4-max-40")
    cpu, _ = decode_ms(m4, engine="llama.cpp-cpu")
    gpu, _ = decode_ms(m4)
    assert cpu.engine_profile.launch_s == pytest.approx(12 * SYNC, rel=1e-12)
    assert gpu.engine == "llama.cpp-metal" and gpu.engine_profile.launch_s == get_engine("llama.cpp-metal", m4).launch_s  # its device's (pooled) profile


def test_explain_says_sync_threads_for_a_cpu_engine():
    p, _ = decode_ms(get_hardware("epyc-genoa-ddr5-4800-12ch"))
    st = next(st for st in build_journey(p).stages if st.key == "launch")
    assert st.label == "sync threads" and "96 threads × 188 ns" in st.note
    # a CPU without a thread count has no barrier term, and explain does not claim one
    p, _ = decode_ms(replace(get_hardware("epyc-genoa-ddr5-4800-12ch"), cpu_threads=0))
    assert next(st for st in build_journey(p).stages if st.key == "launch").label == "launch kernels"


def test_a_calibrated_machine_has_its_barriers_in_the_measured_overhead():
    # `tokspeed measure --calibrate` fits t = bytes / (BW eta) + overhead_s on this machine: the barriers are
    # inside overhead_s, so the prior's per-thread term must not be added on top
    hw = replace(get_hardware("epyc-genoa-ddr5-4800-12ch"), source="measured by tokspeed probe",
                 calibration={"llama.cpp": {"eta_mem": 0.6, "overhead_s": 3e-3, "rms_rel_error": 0.02}})
    p, ms = decode_ms(hw)
    assert p.engine_profile.launch_s == 0.0 and p.engine_profile.fixed_s == 3e-3


def test_ollama_on_a_cpu_pays_the_barrier_once():
    genoa = get_hardware("epyc-genoa-ddr5-4800-12ch")
    p, _ = decode_ms(genoa, engine="ollama")
    assert p.engine_profile.launch_s == pytest.approx(GENOA, rel=1e-12)


def test_cpu_stages_of_an_offload_pay_the_barrier_too():
    # experts or layers kept on the host CPU run on its threads, with the same barrier as a CPU-only run (it used
    # to be left out there); the GPU stages keep the GPU engine's launches
    cpu = get_hardware("epyc-genoa-ddr5-4800-12ch")
    for offload, kw in (("experts", {}), ("layers", {"gpu_layers": 10})):
        p = tokspeed.predict("llama-3-70b" if offload == "layers" else "qwen3-coder-30b-a3b", "rtx-4060",
                             quant="Q4_K_M", offload=offload, cpu=cpu, prompt=0, gen=16, **kw)
        stages = p.layout.stages
        assert any(st.kind == "cpu" for st in stages), offload
        for st in stages:
            want = GENOA if st.kind == "cpu" else get_engine("llama.cpp-cuda", get_hardware("rtx-4060")).launch_s
            assert st.engine.launch_s == pytest.approx(want, rel=1e-12), (offload, st.name)


def test_a_probed_profile_records_llama_cpps_thread_count(monkeypatch):
    from tokspeed.measure import detect

    monkeypatch.setattr(detect, "_sysctl", lambda name: "12" if name == "hw.perflevel0.physicalcpu" else "")
    assert detect.llama_threads(apple=True) == 12          # M4 Max: 12 P-cores, not the 16 physical cores
    monkeypatch.setitem(__import__("sys").modules, "psutil", None)
    assert detect.llama_threads(apple=False) == 0          # no psutil: unknown, not os.cpu_count()'s SMT threads


def test_cpu_threads_load_from_a_hardware_file(tmp_path):
    from tokspeed.hardware.catalog import hardware_from_toml

    f = tmp_path / "epyc.toml"
    f.write_text('name = "My EPYC"\nkind = "cpu"\nvendor = "AMD"\nmemory_gb = 384\nbandwidth_gbps = 460\n'
                 'cpu_threads = 64\n')
    hw = hardware_from_toml(f)
    assert hw.cpu_threads == 64
    p, _ = decode_ms(hw)
    assert p.engine_profile.launch_s == pytest.approx(64 * SYNC, rel=1e-12)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "8"])
def test_a_bad_thread_count_is_refused(bad):
    with pytest.raises(UserError):
        Hardware(id="x", name="x", kind="cpu", vendor="AMD", memory_gb=64, bandwidth_gbps=100, cpu_threads=bad)


def test_threads_on_one_ccx_pay_the_local_transfer_and_other_archs_the_prior():
    """Up to 8 Zen 4 threads share one CCD's L3: 60 ns per thread; 16 span two: (30 + 1/2 x 70) / 30 = 2.17 x;
    a Xeon's mesh (no CCX listed) keeps the prior's 60 ns."""
    from tokspeed.engines.cpu import barrier_scale, with_threads

    z4 = get_hardware("ryzen-9-7950x")
    assert barrier_scale(with_threads(z4, 8)) == 1.0
    assert barrier_scale(z4) == pytest.approx((30 + 35) / 30)
    assert barrier_scale(get_hardware("xeon-spr-ddr5-4800-8ch")) == 1.0
    assert get_engine("llama.cpp-cpu").with_barrier(z4).launch_s == pytest.approx(16 * SYNC * 65 / 30)
