"""One option table shared by the verbs (tokspeed/cli/options.py): an option that means one thing is declared
once, with the same choices everywhere, and each verb's --help states its default and why."""

import argparse
import re

import pytest

from tokspeed.cli.main import build_parser
from tokspeed.engines.compat import engine_names
from tokspeed.quant.kv import KV_BYTES

VERBS = ("predict", "sweep", "explain", "serve", "fit", "plan")
KV_VERBS = ("predict", "sweep", "explain", "serve", "plan", "inspect")


def _verbs():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _option(p, flag):
    return next((a for a in p._actions if flag in a.option_strings), None)


def _help(p) -> str:
    return " ".join(p.format_help().split())


@pytest.mark.parametrize("verb", VERBS)
def test_engine_lists_every_engine_of_the_capability_table(verb):
    p = _verbs()[verb]
    assert _option(p, "--engine") is not None
    text = _help(p)
    help_ = text[text.index("-e ENGINE "):]
    names = help_[help_.index(":") + 1:help_.index("(llama.cpp picks")].replace(" ", "").split(",")
    listed = set()                        # the help's names, "llama.cpp[-cuda|-rocm]" read as three names
    for item in names:
        base, _, variants = item.partition("[")
        listed.add(base)
        listed.update(base + v for v in variants.rstrip("]").split("|") if v)
    for name in engine_names():           # sglang and llama.cpp-rocm among them
        assert name in listed, (verb, name, sorted(listed)[:30])


def test_kv_dtype_is_one_set_of_choices():
    verbs = _verbs()
    sets = {v: tuple(_option(verbs[v], "--kv-dtype").choices) for v in KV_VERBS}
    assert set(sets.values()) == {tuple(KV_BYTES)}


def test_each_default_is_stated_with_its_reason():
    verbs = _verbs()
    assert _option(verbs["predict"], "--engine").default == "llama.cpp"
    assert _option(verbs["serve"], "--engine").default == "vllm"
    predict, serve, fit = _help(verbs["predict"]), _help(verbs["serve"]), _help(verbs["fit"])
    assert "(default llama.cpp: the engine people run a downloaded model with" in predict
    assert "(default vllm: the engine people serve many concurrent requests with" in serve
    assert "default 0: one answer from an empty cache" in predict
    assert "default 8,192, a common chat length, clamped to each model's trained window" in fit
