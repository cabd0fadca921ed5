"""A linear mixer's ggml ops on the host CPU where the backend's build lacks them (engines/host_ops.py): which ops and
builds, the bytes over the host link by hand from Nemotron-3-Nano's published shape, and the fit's mirror."""

import math
from dataclasses import replace

import pytest

from tokspeed.engines.host_ops import host_run, link_bytes_s
from tokspeed.hardware.catalog import get_hardware
from tokspeed.ledger import forward_ops
from tokspeed.quant.kv import kv_bytes
from tokspeed.quant.schemes import scheme_for
from tokspeed.resolve import resolve_model
from tokspeed.engines.rates_stream import stream_bytes_s
from tokspeed.timing import host_engine, host_time

# Nemotron-3-Nano-30B-A3B (its config: 23 Mamba-2 layers, 64 heads x 64, 8 groups x d_state 128, conv 4):
LAYERS, D_INNER, GROUPS, D_STATE, HEADS, CONV = 23, 64 * 64, 8, 128, 64, 4
CONV_DIM = 2 * GROUPS * D_STATE + D_INNER                    # x, B, C through the conv: 6,144
STATE = ((CONV - 1) * CONV_DIM + HEADS * D_STATE * 64) * 4    # F32 per layer: 2,170,880 B


def _scan(model="nemotron-3-nano-30b-a3b", tokens=1):
    spec = resolve_model(model)[0]
    ops = forward_ops(spec, scheme_for("Q4_K_M", spec), kv_bytes("f16"), 1, tokens, 0)
    return next(o for o in ops if o.state_rule)


def test_the_scans_token_tensors_and_state_by_hand():
    op = _scan(tokens=4)
    assert op.state_bytes == LAYERS * STATE == 49_930_240
    assert op.conv_io_bytes == LAYERS * 4 * 2 * CONV_DIM * 4                  # conv in and out, 4 tokens
    assert op.rule_io_bytes == LAYERS * 4 * (CONV_DIM + HEADS + D_INNER) * 4   # x, B, C, dt in; y out


def test_which_builds_run_which_ops_on_the_host():
    op = _scan()
    # ggml-sycl: ssm_scan from 2026-06 (the 2026-05 rows run it on the host), ssm_conv from 2026-03
    may = host_run(op, "llama.cpp-sycl", "2026-05")
    assert may.ops == ("ssm_scan",) and may.splits == LAYERS
    assert may.link_bytes == 2 * op.state_bytes + op.rule_io_bytes
    feb = host_run(op, "llama.cpp-sycl", "2026-02")
    assert feb.ops == ("ssm_conv", "ssm_scan") and feb.splits == 2 * LAYERS
    assert feb.link_bytes == may.link_bytes + op.conv_io_bytes
    assert host_run(op, "llama.cpp-sycl", "2026-06") is None
    assert host_run(op, "llama.cpp-sycl", "") is None                      # today's build
    # ggml-vulkan: both from 2025-09; CUDA, Metal and the CPU itself never
    assert host_run(op, "llama.cpp-vulkan", "2025-08").splits == 2 * LAYERS
    assert host_run(op, "llama.cpp-vulkan", "2025-12") is None
    for engine in ("llama.cpp-cuda", "llama.cpp-metal", "llama.cpp-rocm", "llama.cpp-cpu", "vllm"):
        assert host_run(op, engine, "2024-06") is None
    # a Gated DeltaNet layer takes ssm_conv and its own rule (never a host node)
    gdn = _scan("qwen3-next-80b-a3b")
    assert host_run(gdn, "llama.cpp-sycl", "2026-05") is None
    assert host_run(gdn, "llama.cpp-sycl", "2026-02").ops == ("ssm_conv",)


def test_the_host_link_a_part_without_one_and_an_integrated_part():
    b70 = get_hardware("arc-pro-b70")                     # no host link in the catalog: PCIe 4.0 x16
    assert link_bytes_s(b70) == 31.5e9
    assert link_bytes_s(replace(b70, host_link_gbps=63.0)) == 63e9
    igpu = get_hardware("radeon-780m")                    # an integrated part copies in its own memory
    assert link_bytes_s(igpu) == igpu.bandwidth_gbps * 1e9 / 2


def test_the_link_term_of_a_trip_by_hand():
    op = _scan()
    b70 = get_hardware("arc-pro-b70")
    slow, fast = host_time(op, "llama.cpp-sycl", b70, 1, "2026-05"), \
        host_time(op, "llama.cpp-sycl", replace(b70, host_link_gbps=63.0), 1, "2026-05")
    crossing = 2 * LAYERS * STATE + LAYERS * (CONV_DIM + HEADS + D_INNER) * 4
    assert math.isclose(slow - fast, crossing / 31.5e9 - crossing / 63e9, rel_tol=1e-9)
    assert host_time(op, "llama.cpp-sycl", b70, 1, "2026-06") == 0.0
    # the rest at one token: what comes back up copied on the host first (read and write of half the crossing), the
    # scan's one read and one write of the state there (memory-bound), a node and its barrier per trip
    view, cpu = host_engine(b70)
    stream = stream_bytes_s(cpu, view)
    assert math.isclose(slow - crossing / 31.5e9,
                        crossing / stream + 2 * LAYERS * STATE / stream + LAYERS * cpu.launch_s, rel_tol=1e-9)


def test_a_build_without_the_scan_decodes_slower_by_its_trips():
    from tokspeed.predict import predict
    kw = dict(hardware="arc-pro-b70", engine="llama.cpp-sycl", quant="Q4_K_M")
    old = predict("nemotron-3-nano-30b-a3b", engine_version="2026-05", **kw).to_dict()["decode"]
    new = predict("nemotron-3-nano-30b-a3b", engine_version="2026-06", **kw).to_dict()["decode"]
    crossing = 2 * LAYERS * STATE
    assert old["ms_per_token"] - new["ms_per_token"] > crossing / 31.5e9 * 1e3      # at least the state's trips
    dense = {k: predict("qwen3.6-35b-a3b", engine_version=v, **kw).to_dict()["decode"]["ms_per_token"]
             for k, v in (("old", "2026-05"), ("new", "2026-06"))}
    assert dense["old"] == dense["new"]                 # a Gated DeltaNet model runs all its ops on the device


def test_the_fits_mirror_times_the_trips_as_predict_does():
    np = pytest.importorskip("numpy")
    from tokspeed.calibration.evaluate import predicted_tok_s
    from tokspeed.calibration.fast import build, predict_rows
    from tokspeed.calibration.rows import load_rows
    from tokspeed.engines.profile import get_engine

    rows = [r for r in load_rows() if not r.skip and r.model == "nemotron-3-nano-30b-a3b"
            and r.engine == "llama.cpp-sycl"]
    assert len(rows) == 4 and all(r.month == "2026-05" for r in rows)
    profs = {r.era: get_engine(r.engine, version=r.era or None) for r in rows}
    fast = predict_rows(build(rows), profs)
    slow = np.array([predicted_tok_s(r, profs[r.era]) for r in rows])
    assert np.allclose(fast, slow, rtol=1e-6)
    assert build(rows).host_s.sum() > 0


def test_explain_says_which_ops_run_on_the_host_and_what_they_cost():
    from tokspeed.explain import explain
    kw = dict(quant="Q4_K_M", engine="llama.cpp-sycl", with_levers=False)
    old = explain("nemotron-3-nano-30b-a3b", "arc-pro-b70", engine_version="2026-05", **kw)
    new = explain("nemotron-3-nano-30b-a3b", "arc-pro-b70", engine_version="2026-06", **kw)
    note = lambda e: " ".join(s.note for s in e.journey.stages)       # noqa: E731
    assert "runs ssm_scan on the host CPU" in note(old) and "23 trips a pass" in note(old)
    assert "host CPU" not in note(new)


def test_a_socs_host_is_its_own_cpu_cluster_and_a_discrete_gpus_a_desktop():
    soc = get_hardware("core-ultra-7-258v")
    view, cpu = host_engine(soc)
    assert view.bandwidth_gbps == soc.cpu_engine_view().bandwidth_gbps == 120.0 and cpu.name == "llama.cpp-cpu"
    assert host_engine(get_hardware("arc-pro-b70"))[0].id == "ddr5-5600-2ch"
    # the Lunar Lake iGPU under a SYCL build without the scan: its trips copy within its own memory
    op = _scan()
    t = host_time(op, "llama.cpp-sycl", soc, 1, "2026-05")
    crossing = 2 * LAYERS * STATE + LAYERS * (CONV_DIM + HEADS + D_INNER) * 4
    assert t > crossing / (soc.bandwidth_gbps * 1e9 / 2)
