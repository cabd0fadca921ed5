"""A weight format's name parsed once: the name as the tables write it, and the kernel group its dequantising falls in.

``format_key("Q4_K_M")`` -> ``FormatKey("Q4_K_M")`` with ``.group == "kquant"``. A ``FormatKey`` is the name itself (a
``str``: it prints, compares, hashes and goes into JSON as the name) carrying what the engine physics reads of it,
so an operator's rate (``tokspeed.engines.rates``) reads ``fmt.group`` instead of re-parsing the name. ``predict``
parses the format where it enters (``predict.resolve``); a plain name given anywhere else is parsed on first use
and remembered.

Not ``tokspeed.quant.formats.Format`` (a storage format's block size and bytes): a ``FormatKey`` is the name
as the engine physics keys on it. Kernel groups (``format_group``, a column of ``formats.toml``): ``float``, ``q8`` (8-bit), ``legacy`` (the
32-weight block formats), ``mxfp4`` (FP4 with block scales), ``kquant`` (K-quants, the i-quants on super-blocks,
ternary), ``int4`` (GPTQ / AWQ / EXL2 and other 4-bit linear formats). The group decides an engine's ``eta_format`` and
``eta_compute_format`` and whether its quantized kernels (MMQ, int8 dot products) apply.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import UserError
from .dynamic import base_name
from .format_table import group_prefixes, row

FORMAT_GROUPS = ("float", "q8", "legacy", "mxfp4", "kquant", "int4")
F32_NAMES = ("F32", "f32")       # models whose weights and activations are F32: matmuls on the FP32 units


class FormatKey(str):
    """A weight format name with its kernel ``group`` and whether it is F32 (``f32``); immutable as a str is."""

    group: str
    f32: bool

    def __new__(cls, name: str):
        self = super().__new__(cls, name)
        self.__dict__.update(group=format_group(name), f32=name in F32_NAMES)
        return self

    def __setattr__(self, key, value):
        raise AttributeError(f"FormatKey {str(self)!r} is immutable")

    @property
    def quantized(self) -> bool:
        return self.group != "float"


@lru_cache(maxsize=512)
def _parse(name: str) -> FormatKey:
    return FormatKey(name)


def format_key(quant) -> FormatKey:
    """``quant`` as a parsed ``FormatKey`` (a FormatKey passes through); UserError for a name with no kernel group."""
    return quant if type(quant) is FormatKey else _parse(str(quant))


def format_group(quant: str) -> str:
    """Weight formats grouped by the kind of dequantisation their kernels do (``formats.toml``: a row's group,
    else a group name itself, else by prefix); an unknown format is an error."""
    q = base_name(quant)
    r = row(q)
    if r is not None:
        return r.group
    if q.lower() in FORMAT_GROUPS:          # already a group (the fit passes group names)
        return q.lower()
    for group, prefixes in group_prefixes().items():
        if q.startswith(prefixes):
            return group
    raise UserError(f"unknown weight format {quant!r} (no kernel group for it)",
                    "use one of the names that `quant` takes", field="quant")
