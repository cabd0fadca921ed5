"""The weight-format table (tokspeed/quant/formats.toml): every row checked, and no new place naming a format."""

import pytest

from tokspeed.engines import compat
from tokspeed.quant import format_table as ft
from tokspeed.quant.format_key import FORMAT_GROUPS, format_group
from tokspeed.quant.formats import GGML
from tokspeed.quant.schemes import scheme_for
from tokspeed.models.catalog import get_model
from noun_scan import files_naming

ROWS = list(ft.rows().values())
MIXTRAL = get_model("mixtral-8x7b")      # rows of 4096: every block size divides them (no fallback types)


@pytest.mark.parametrize("r", ROWS, ids=lambda r: r.name)
def test_every_row(r):
    assert r.group in FORMAT_GROUPS and r.source and r.source != "?"
    assert format_group(r.name) == r.group
    # the bulk tensors (an expert FFN) hold `bits` bits per weight: the scheme the name builds agrees with the row
    bulk = scheme_for(r.name, MIXTRAL).element_bytes("ffn_up_exps", 1, MIXTRAL.d_model) * 8
    assert bulk == pytest.approx(r.bits, rel=1e-12)
    if r.main_type:        # a llama.cpp ftype: bits by hand from its main type's block (ggml.c type_traits)
        block = GGML[r.main_type]
        assert r.bits == pytest.approx(block.block_bytes * 8 / block.block)
    for name in r.engine_lists:
        assert any(f"@{name}" in row.get("weights", []) for row in compat._table()["engine"].values())
    for runtime in r.fit + r.alternatives:
        assert runtime == ft.OTHER or runtime in {compat.runtime_of(e) for e in compat.engine_names()}
    if r.mix_of:
        assert ft.row(r.mix_of).main_type


def test_bits_by_hand():
    # ggml.c type_traits: Q4_K 144 B per 256 weights, Q6_K 210 / 256, Q8_0 34 / 32; NVFP4 9 B per 16 (E2M1 + E4M3)
    assert ft.row("Q4_K_M").bits == 144 * 8 / 256 == 4.5
    assert ft.row("Q6_K").bits == 210 * 8 / 256
    assert ft.row("Q8_0").bits == 34 * 8 / 32
    assert ft.row("NVFP4").bits == 9 * 8 / 16


def test_ftype_ids_are_llamacpp_file_types():
    gguf = pytest.importorskip("gguf")
    for r in ROWS:
        if r.ftype_id is not None:
            # MXFP4 is LlamaFileType.MOSTLY_MXFP4_MOE; the rest are ALL_<name> / MOSTLY_<name>
            names = {f"ALL_{r.name}", f"MOSTLY_{r.name}", f"MOSTLY_{r.name}_MOE"}
            assert gguf.LlamaFileType(r.ftype_id).name in names


def test_ggml_ids_are_ggml_types():
    gguf = pytest.importorskip("gguf")
    for name, t in ft.ggml_types().items():
        if name in gguf.GGMLQuantizationType.__members__:
            assert gguf.GGMLQuantizationType[name].value == t["id"]


@pytest.mark.parametrize("runtime", ft.fit_runtimes())
def test_fit_lists_fall_in_bits(runtime):
    """fit bisects its list: bits per weight must not rise along it."""
    bits = [ft.row(q).bits for q in ft.fit_formats(runtime)]
    assert bits == sorted(bits, reverse=True)


def test_torch_dtypes_by_hand():
    # the torch reference decoder runs the three IEEE / bfloat16 element types, at 32 and 16 bits
    assert ft.torch_dtypes() == {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
    assert all(ft.row(n).bits == {"float32": 32, "float16": 16, "bfloat16": 16}[d] for n, d in ft.torch_dtypes().items())
    assert ft.torch_default("cpu") == "F32" and ft.torch_default("cuda:1") == ft.torch_default("cuda") == "BF16"


def test_defaults_are_rows():
    assert ft.row(ft.download_default("llama.cpp")) is not None
    assert all(ft.row(q) for q in ft.fallbacks())
    assert ft.download_default("vllm") == ""


# A format row names itself in the table's loader and at most one more module (the code that needs the
# literal: llama.cpp's mix rules, a storage's block layout). The names below are GGML storage types or the
# defaults shown in help text: the physics keyed on a GGML type (CPU repack tables, llama.cpp's mix rules, file
# readers) names them; their ceiling is today's count, so a new place naming one fails.
CEILING = {"F32": 6, "F16": 14, "BF16": 12, "FP8": 10, "INT8": 6, "Q2_K": 3, "Q4_K_M": 6, "Q6_K": 3, "Q8_0": 6,
           "Q4_0": 3, "IQ4_XS": 3, "MXFP4": 5}


@pytest.mark.parametrize("name", [r.name for r in ROWS])
def test_a_format_is_named_in_at_most_two_modules(name):
    files = files_naming(name)
    assert len(files) <= CEILING.get(name, 2), f"{name} named in {files}: ask tokspeed.quant.format_table"
