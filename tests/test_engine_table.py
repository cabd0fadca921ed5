"""The engine table (tokspeed/engines/capabilities.toml): every row checked, and no new place naming an engine."""

import tomllib

import pytest

from tokspeed.engines import compat
from tokspeed.serving import engine_versions
from tokspeed.workload import DEFAULT_ENGINE
from noun_scan import files_naming

TABLE = compat._table()
NAMES = compat.engine_names()
KINDS = {"gpu", "soc", "cpu", "accelerator"}


@pytest.mark.parametrize("name", NAMES)
def test_every_row(name):
    row = TABLE["engine"][name]
    assert row["source"] and row["runtime"] in {TABLE["engine"][n]["runtime"] for n in NAMES}
    if "backend" in row:           # a front end that picks a backend by device class: each one a row
        assert set(row["backend"].values()) <= set(NAMES)
    else:
        assert set(row["kinds"]) <= KINDS and row["devices"] and row["kv_dtypes"] and row["weights"]
    assert compat.engine_key(name) == name
    h = compat.engine_help()     # a llama.cpp backend shows as its suffix: llama.cpp[-cuda|...]
    assert name in h or "-" + name.rsplit("-", 1)[-1] in h


def test_aliases_name_engines():
    for spelling, name in TABLE["aliases"].items():
        assert spelling == spelling.lower() and name in NAMES
        assert compat.engine_key(spelling.upper()) == name


def test_default_engines_are_rows():
    assert all(name in NAMES for name in TABLE["default_engine"].values())


def test_llama_bench_backends_name_llama_cpp_engines():
    # llama-bench's `backends` column words (ggml_backend_reg_name, lower case) each name a llama.cpp backend row
    backends = compat.llama_bench_backends()
    for word, name in backends.items():
        assert word == word.lower() and name in NAMES and compat.runtime_of(name) == "llama.cpp"
    # by hand: HIP is the ROCm backend's older name, BLAS a CPU build's; CUDA runs on NVIDIA GPUs, CPU on a CPU
    assert backends["hip"] == backends["rocm"] and backends["blas"] == backends["cpu"]
    assert "nvidia" in TABLE["engine"][backends["cuda"]]["devices"]
    assert TABLE["engine"][backends["cpu"]]["kinds"][0] == "cpu"


def test_offload_cpu_engine_runs_on_a_cpu():
    # llama.cpp -ngl / --n-cpu-moe leave layers and experts to its CPU backend (ggml-cpu): a CPU engine row
    e = compat.offload_cpu_engine()
    assert e in NAMES and "cpu" in TABLE["engine"][e]["kinds"] and compat.runtime_of(e) == "llama.cpp"


def test_server_family_is_the_engines_with_releases():
    # the server engines share a serving fit per vendor; they are the engines whose releases the serving
    # package tracks (serving/engine_versions.toml), and llama.cpp is not one
    releases = set(tomllib.loads(engine_versions.FILE.read_text()))
    assert {n for n in NAMES if compat.engine_family(n)} == releases
    assert all(compat.engine_family(n) in ("", "server") for n in NAMES)
    assert compat.engine_family("llama.cpp") == "" and compat.engine_family("not-an-engine") == ""


def test_each_verbs_default_engine_says_why():
    for engine in (DEFAULT_ENGINE, compat.default_engine("serve")):
        assert compat.default_why(engine)
    assert compat.default_why("ideal") == ""


def test_engine_help_by_hand():
    # the llama.cpp backends fold into one entry; the server engines stand alone
    h = compat.engine_help()
    assert "llama.cpp[-cuda|-metal|-rocm|-sycl|-vulkan|-cpu]" in h and ", sglang," in h


# An engine names itself in the table's loader and at most one more module. The llama.cpp family (the default
# engine, with its front ends: `ollama:NAME` is also a model source) and `ideal` (the roofline engine every verb
# offers) are named more widely; their ceiling is today's count, so a new place naming one fails. llama.cpp's CPU
# backend is named by the CPU kernel rules (engines/rates.py: its attention kernel, which ik_llama.cpp does not run)
# and the engine profiles' measurement table (engines/profile.py), two places like every other engine.
CEILING = {"llama.cpp": 38, "ollama": 17, "ideal": 5, "lm-studio": 3}


@pytest.mark.parametrize("name", NAMES)
def test_an_engine_is_named_in_at_most_two_modules(name):
    files = files_naming(name)
    assert len(files) <= CEILING.get(name, 2), f"{name} named in {files}: ask tokspeed.engines.compat"
