"""The engine table (tokspeed/engines/capabilities.toml): every row checked, and no new place naming an engine."""

import pytest

from tokspeed.engines import compat
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


def test_engine_help_by_hand():
    # the llama.cpp backends fold into one entry; the server engines stand alone
    h = compat.engine_help()
    assert "llama.cpp[-cuda|-metal|-rocm|-sycl|-vulkan|-cpu]" in h and ", sglang," in h


# An engine names itself in the table's loader and at most one more module. The llama.cpp family (the default
# engine, with its front ends: `ollama:NAME` is also a model source) and `ideal` (the roofline engine every verb
# offers) are named more widely, and llama.cpp's CPU backend by the CPU kernel rules (engines/rates.py: its attention
# kernel, which ik_llama.cpp does not run); their ceiling is today's count, so a new place naming one fails.
CEILING = {"llama.cpp": 38, "ollama": 17, "ideal": 5, "lm-studio": 3, "llama.cpp-cpu": 3}


@pytest.mark.parametrize("name", NAMES)
def test_an_engine_is_named_in_at_most_two_modules(name):
    files = files_naming(name)
    assert len(files) <= CEILING.get(name, 2), f"{name} named in {files}: ask tokspeed.engines.compat"
