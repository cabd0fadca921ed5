"""The built-in model catalog: one TOML file per model in ``models/data/``, each with its source."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean
from .spec import ModelSpec

DATA = Path(__file__).parent / "data"


@lru_cache(maxsize=1)
def _entries() -> dict[str, Path]:
    out = {}
    for p in sorted(DATA.glob("*.toml")):
        out[p.stem] = p
    return out


@lru_cache(maxsize=1)
def _aliases() -> dict[str, str]:
    """Lower-case aliases -> id. An entry may list ``aliases = [...]`` in its file."""
    out = {}
    for mid, path in _entries().items():
        out[mid] = mid
        for a in load_entry_raw(path).get("aliases", []):
            out[a.lower()] = mid
    return out


@lru_cache(maxsize=None)
def load_entry_raw(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def model_ids() -> list[str]:
    return list(_entries())


# what a repo id or a table adds to a model's name without changing its shapes: an org ("meta-llama/"), a
# "Meta-" prefix, a fine-tune's suffix (instruct/chat/it/base/hf) -- and, where the weight format is given apart (a
# calibration row's quant column), a packaging suffix (gguf, awq, gptq, fp8...)
VARIANT_SUFFIX = re.compile(r"-(instruct|chat|it|base|hf)$")
PACKAGING_SUFFIX = re.compile(r"-(instruct|chat|it|base|hf|gguf|awq|gptq|int4|int8|fp8|bf16|fp16)$")


def resolve_id(name: str, packaging: bool = False) -> str | None:
    """The catalog id of ``name``: an id or alias (case-insensitive), else the same name as a repo id or a table
    writes it -- "meta-llama/Llama-3.1-8B-Instruct", "Llama 2 7B", "gpt-oss 20B", "Qwen2.5-7B-Instruct" -- where
    stripping the org, a "Meta-" prefix and a fine-tune's suffixes (``VARIANT_SUFFIX``: the shapes are kept) and
    writing spaces as dashes gives one; None otherwise. A packaged repo ("Qwen2.5-7B-Instruct-AWQ") is not the
    catalog model: its weights are another format, which its files say. ``packaging``: strip those suffixes too, for
    a name whose weight format is stated apart (a calibration row)."""
    key = name.strip().lower()
    if key in _entries():
        return key
    if key in _aliases():
        return _aliases()[key]
    key = re.sub(r"[\s_]+", "-", key.rsplit("/", 1)[-1]).removeprefix("meta-")
    suffix = PACKAGING_SUFFIX if packaging else VARIANT_SUFFIX
    while True:
        hit = key if key in _entries() else _aliases().get(key)
        if hit or not suffix.search(key):
            return hit if hit is None or not other_version(name, hit) else None
        key = suffix.sub("", key)


VERSION = re.compile(r"(?<![\d.])(\d+\.\d+)(?![\d.]*b\b)(?![\d.])|(?<=-)(2[3-9][01]\d)\b", re.I)


def _versions(text: str) -> set[str]:
    """Version numbers ("3.1") and release dates ("2503", YYMM) in a model name; sizes ("3.8b") are not versions."""
    return {a or b for a, b in VERSION.findall(str(text).lower())}


def other_version(name: str, mid: str) -> bool:
    """``name`` states a version or release date the catalog entry ``mid`` is not ("Mistral-Small-3.1-24B-Instruct-2503"
    is no mistral-small-3.2-24b): it must not be mapped to it silently."""
    raw = load_entry_raw(_entries()[mid])
    own = _versions(" ".join([mid, raw.get("name", ""), raw.get("hf_repo", ""), *raw.get("aliases", [])]))
    return bool(_versions(name) - own)


@lru_cache(maxsize=None)
def get_model(name: str) -> ModelSpec:
    mid = resolve_id(name)
    if mid is None:
        why = left_out(name)
        if why and why["kind"] == "architecture":
            raise UserError(f"unknown model {name!r}: not in the catalog: {why['reason']}",
                            "tokspeed refuses rather than guess; see docs/models.md, Records left out")
        raise UserError(f"unknown model {name!r}: not in the catalog" + (f": {why['reason']}" if why else ""),
                        not_in_catalog_hint(name))
    raw = dict(load_entry_raw(_entries()[mid]))
    raw.pop("aliases", None)
    raw.setdefault("id", mid)
    return ModelSpec.from_dict(raw)


# how to predict a model the catalog lacks: tokspeed reads its shape from these (docs/models.md)
PREDICT_ANYWAY = ("to predict it anyway, give its config.json or GGUF file path, or its Hugging Face repository id "
                  "ORG/NAME: the shape is read from them")


LEFT_OUT = Path(__file__).parent / "left_out.toml"


def _key(name: str) -> str:
    """A name as the left-out table keys it: lower case, no org, spaces and underscores as dashes."""
    return re.sub(r"[\s_]+", "-", str(name).strip().lower().rsplit("/", 1)[-1])


@lru_cache(maxsize=1)
def _left_out() -> dict[str, dict]:
    with open(LEFT_OUT, "rb") as f:
        return {_key(i): m for m in tomllib.load(f)["model"] for i in m["ids"]}


def left_out(name: str) -> dict | None:
    """The record a name refers to that is left out of the catalog (``left_out.toml``: its ``kind`` and ``reason``),
    with a fine-tune's suffix dropped ("Kimi-K2-Instruct"); None otherwise."""
    key = _key(name)
    return _left_out().get(key) or _left_out().get(VARIANT_SUFFIX.sub("", key))


def not_in_catalog_hint(name: str) -> str:
    """The hint of an unknown model: the closest catalog ids, and the inputs that predict it without an entry."""
    close = did_you_mean(name, model_ids())
    return f"{close} Or {PREDICT_ANYWAY}" if close else PREDICT_ANYWAY[0].upper() + PREDICT_ANYWAY[1:]


def all_models() -> list[ModelSpec]:
    return [get_model(m) for m in model_ids()]
