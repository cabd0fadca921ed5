"""Library errors in the library's words: outside ``cli/`` and ``web/`` no raise names a command-line flag and the
``--json`` document carries none; the library names parameters as the Python call does and says which one is at
fault (``UserError.field``); the CLI writes them as flags and the web API as its query fields."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tokspeed import predict
from tokspeed.errors import UserError, reword

PACKAGE = Path(__file__).resolve().parent.parent / "tokspeed"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _flags_in_raises(source: str) -> list[str]:
    """Flag-shaped text in the string constants of every ``raise`` and every ``UserError(...)`` of ``source``."""
    texts = {}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Raise) and node.exc is not None) or (
                isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "UserError"):
            texts.update({(sub.lineno, sub.col_offset): sub.value for sub in ast.walk(node)
                          if isinstance(sub, ast.Constant) and isinstance(sub.value, str)})
    return [m for _, text in sorted(texts.items()) for m in FLAG.findall(text)]


def test_the_scan_finds_a_flag_in_a_raise():
    assert _flags_in_raises('def f(g):\n    if g:\n        raise UserError(f"--gpus {g}", "use --parallel tp")\n') \
        == ["--gpus", "--parallel"]
    assert _flags_in_raises('x = UserError("bad", "try " + "--quant Q4_0")') == ["--quant"]
    assert _flags_in_raises('raise UserError("gpus=2 with parallel=\'none\'")') == []


def test_no_flag_in_a_raise_outside_the_surfaces():
    found = {}
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE).as_posix()
        if rel.startswith(("cli/", "web/")):
            continue
        flags = _flags_in_raises(p.read_text(encoding="utf-8"))
        if flags:
            found[rel] = flags
    assert not found, f"raises naming CLI flags (name the parameter instead; cli/ translates): {found}"


def test_reword_writes_parameters_in_a_surface_s_words():
    flags = {"parallel": "--parallel", "gpus": "--gpus", "top": "--top", "engine": "--engine"}
    assert reword("parallel='none' with gpus=2", flags) == "--parallel none with --gpus 2"
    assert reword("top must be at least 1, got 0", flags, field="top") == "--top must be at least 1, got 0"
    assert reword("use `engine` ideal", flags) == "use --engine ideal"
    # a value's own grammar and prose that merely contains a name stay as they are
    assert reword("write tp=4,pp=2 or parallel='tp=4,pp=2'", flags) == "write tp=4,pp=2 or --parallel tp=4,pp=2"
    assert reword("the top layers", flags, field="gpus") == "the top layers"
    # the web keeps name=value, renaming only where its field differs
    assert reword("flash_attention=True needs `flash_attention`", {"flash_attention": "flash_attn"}, assign="=") \
        == "flash_attn=True needs flash_attn"


def test_the_library_names_the_parameter():
    with pytest.raises(UserError) as e:
        predict("llama-3-8b", "rtx-4090", gpus=2, parallel="none")
    assert e.value.field == "parallel"
    assert e.value.message == "parallel='none' with gpus=2" and "--" not in str(e.value)


def test_the_cli_names_the_flags():
    r = subprocess.run([sys.executable, "-m", "tokspeed", "predict", "llama-3-8b", "--hardware", "rtx-4090",
                        "--gpus", "2", "--parallel", "none"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == ("tokspeed: error: --parallel none with --gpus 2 "
                                "(use tp, pp, split or tp=A,pp=B)")


def test_json_carries_no_flag_names():
    doc = predict("llama-3-8b", "rtx-4090").to_dict()     # the newest fitted era: its source says how to ask for another
    assert "engine_version" in doc["engine_source"]
    assert not FLAG.findall(json.dumps(doc)), FLAG.findall(json.dumps(doc))
