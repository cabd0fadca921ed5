"""The engine tables and their eras: ``priors.toml`` (documented priors) under ``fitted.toml`` (the engine fit),
an engine's entry for one era, with the attention values that go with fused or unfused attention and, for a
backend compiled from another's kernels, that engine's decode memory model. ``EngineProfile`` is built from
what ``engine_entry`` returns (``tokspeed.engines.profile.get_engine``)."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean
from .compat import engine_defaults
from .eras import (era_family, era_labels, flash_attention_available, nearest_era, newest_unfused_era,
                   parse_version, unfused_attention)

HERE = Path(__file__).parent
# fitted.toml's per-engine partial pooling (tokspeed.engines.pooling): rows per architecture family, pooling strength
POOLING_KEYS = ("arch_rows", "vendor_rows", "pool_rows", "decode_unseen_pct", "prefill_unseen_pct")

def load_table(fname: str) -> dict:
    """One engine table (``priors.toml`` or ``fitted.toml``) as {engine: {key: value}}; {} if absent."""
    p = HERE / fname
    if not p.is_file():
        return {}
    with open(p, "rb") as f:
        return tomllib.load(f)


@lru_cache(maxsize=1)
def _tables() -> dict:
    data = {}
    for fname in ("priors.toml", "fitted.toml"):
        for name, entry in load_table(fname).items():
            data[name] = {**data.get(name, {}), **entry}
    return data


# A llama.cpp backend built from another backend's kernel source (priors.toml ``kernels_of``: the HIP build
# is the CUDA source compiled with hipcc) shares with it the memory side of decode -- the achievable
# fraction per memory technology, the kernel bound per core cycle, the format and KV-cache efficiencies --
# and the host loop's per-step cost; launches, prefill compute and the band stay its own. It takes the
# newest fitted era's values for every era, as any engine without rows has one set of values: an older
# era's fitted values trade bandwidth against launches that ran without graphs, so carried over alone they
# would make an old build faster.
SHARED_KERNEL_FIELDS = ("eta_mem", "bytes_per_core_cycle", "eta_format", "eta_kv", "fixed_s")


def with_shared_kernels(entry: dict, shared: dict, of: str, era: str = "") -> dict:
    """``entry`` (a table entry with ``kernels_of`` popped) completed by ``shared``, the entry of the
    engine ``of`` whose kernels it runs, saying so in its source. The entry's own values win (a fit of
    the engine itself, should it get rows, overrides what it borrowed)."""
    if of not in _tables() or "kernels_of" in _tables()[of]:
        raise ValueError(f"priors.toml: kernels_of = {of!r} must name an engine with its own values")
    out = {**{k: shared[k] for k in SHARED_KERNEL_FIELDS if k in shared}, **entry}
    own = entry.get("source", "")
    if "whose kernels it compiles" not in own:      # a fitted source quotes its prior's, which says it already
        own += (f"; decode memory model (eta_mem, kernel bound, eta_format, eta_kv, fixed_s) of {of}"
                f"{' era ' + era if era else ''}, whose kernels it compiles")
    out["source"] = own
    return out


def engine_entry(engine: str, version=None, flash_attention: bool | None = None) -> tuple[dict, str]:
    """The table entry of a (resolved) engine for an era, and that era's label.

    ``fitted.toml`` holds an engine's newest fitted era at the top (its ``version``) and older eras
    under ``eras``; ``version`` (a build ``b6000``, a month ``2025-08``, a year or an era label) selects
    one, the nearest fitted era standing in for one without rows (an ``EngineVersion``, parsed where it entered,
    passes through). No version: the newest.
    ``flash_attention``: attention fused or not (``with_attention``); None: as the era runs it by default."""
    version = parse_version(engine, version)
    entry, label = _own_entry(engine, version)
    asked = version.label if version is not None and label else label     # not the nearest fitted
    if asked:
        entry = with_attention(engine, entry, label, runs_flash_attention(engine, asked, flash_attention, version))
    of = entry.pop("kernels_of", None)
    if of:                                    # its decode memory model is that engine's (newest era)
        shared, shared_era = engine_entry(of)
        entry = with_shared_kernels(entry, shared, of, shared_era)
    return entry, label


def runs_flash_attention(engine: str, era: str, asked: bool | None = None, version=None) -> bool:
    """Whether an era of a llama.cpp backend runs attention fused: ``asked`` (True/False: ``-fa on|off``), else
    its default -- FlashAttention on by default in the era (eras.toml; ``-fa auto`` from 2025 builds) where the
    backend has the kernel (capabilities.toml ``defaults.flash_attention``) in the build (``version``: a month or build
    before the backend's kernels, eras.toml ``backend_flash_attention_since``, runs unfused; None: the era's)."""
    if asked is not None:
        return bool(asked)
    return (not unfused_attention(engine, era) and bool(engine_defaults(engine).get("flash_attention", False))
            and flash_attention_available(engine, version if version is not None else era))


def with_attention(engine: str, entry: dict, label: str, fused: bool) -> dict:
    """``entry`` (values of the fitted era ``label``, or priors for every era) with the attention values that
    go with ``fused``: the score-matrix traffic per attention FLOP (``attn_bytes_per_flop``) and the share of
    per-query-head K/V re-reads reaching memory (``kv_reread``), each taken from an era that ran that way.

    - fused: one read of each K/V head, and the traffic of the newest era that ran fused by default where it
      was fitted (Metal's FlashAttention kernel keeps some of its own; CUDA's none), else none;
    - unfused: the values as they are when they come from an unfused era or from priors (the priors are the
      unfused kernels'), else those of the newest era that ran unfused by default."""
    out = {**entry, "flash_attention": fused}
    top = _tables()[engine]
    newest = top.get("version", "")             # the newest fitted era ("" = priors only)
    from_fused_era = bool(newest) and not unfused_attention(engine, label)
    if fused:
        out["kv_reread"] = 0.0
        if not from_fused_era:
            fused_fit = bool(newest) and not unfused_attention(engine, newest)
            out["attn_bytes_per_flop"] = top.get("attn_bytes_per_flop", 0.0) if fused_fit else 0.0
    elif from_fused_era:
        src = _own_entry(engine, parse_version(engine, newest_unfused_era(engine)))[0]
        out.update(kv_reread=src.get("kv_reread", 0.0), attn_bytes_per_flop=src.get("attn_bytes_per_flop", 0.0))
    return out


def _own_entry(engine: str, version=None) -> tuple[dict, str]:
    """``engine_entry`` before ``kernels_of`` is resolved (``version``: an ``EngineVersion`` or None)."""
    entry = dict(_tables()[engine])
    eras = entry.pop("eras", {})
    for key in POOLING_KEYS:                  # read by engines.pooling, not profile fields
        entry.pop(key, None)
    base = entry.pop("version", "")
    if not era_family(engine):               # parse_version refused a version for it
        return entry, ""
    if version is None:
        return entry, base or era_labels(engine)[-1]
    label = version.label
    if label not in era_labels(engine):
        raise UserError(f"unknown {engine} era {version.text!r}", did_you_mean(label, era_labels(engine))
                        or "use a build number (b6000), a year-month (2025-08) or one of "
                        + ", ".join(era_labels(engine)))
    if not base:                              # priors only: one set of values for every era
        return entry, label
    label = nearest_era(engine, label, [base, *eras])
    return ({**entry, **eras[label]} if label != base else entry), label
