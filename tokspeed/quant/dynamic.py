"""Quant names that are a mix over another one: Unsloth's dynamic ``UD-*`` GGUFs, ik_llama.cpp's ftypes, and any
name at a stated file size (``UD-Q4_K_XL@22.8GB``).

- ``UD-<ftype>`` (Unsloth "Dynamic 2.0" GGUFs: ``UD-IQ1_S``, ``UD-IQ2_M``, ``UD-Q4_K_XL``, ``UD-Q8_K_XL`` ...)
  keep llama.cpp's mix for the ftype they are named after and move some tensors to more bits, tensor by tensor,
  from their own measurements; the per-tensor choice is not published as a rule. Without a size they take the
  mix of their base ftype (``Q<n>_K_XL`` -> ``Q<n>_K_M``, or the one k-quant of that width: ``Q2_K``, ``Q6_K``;
  ``Q8_K_XL`` -> ``Q8_0``), a lower bound on their bytes. With the file's size (``@<size>``) every tensor of that
  mix is scaled so that the weights add up to it: what a GGUF's own size says about what a token reads.
- ik_llama.cpp ftypes (``IQ2_K`` ... ``IQ6_K``, ``_KS``, ``_KSS``, ``_KL``, ``_KT``): the ftype's own type on every
  matrix, the output tensor as ik's ``llama-quantize.cpp`` sets it (Q5_K for the 1-3 bit ones, IQ6_K for IQ6_K,
  else Q6_K); ik's per-layer upgrades of attn_v / ffn_down are not transcribed (a lower bound, within a few %).
- ``<name>@<size>``: size in B, GB (10^9) or GiB (2^30).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UserError
from ..ledger import resident_weight_bytes
from .format_table import ik_ftypes, ud_mixes

UD_XL = ud_mixes()          # formats.toml mix_of: UD-Q4_K_XL -> Q4_K_M
IK_FTYPES = ik_ftypes()
# ik_llama.cpp llama-quantize.cpp: the output tensor of these ftypes is Q5_K (with an output tensor of its own)
IK_OUTPUT_Q5 = ("IQ2_K", "IQ3_K", "IQ2_KS", "IQ3_KS", "IQ2_KL", "IQ2_KT", "IQ3_KT", "IQ1_KT")
SIZE = re.compile(r"^(.+?)\s*@\s*(\d+(?:\.\d+)?)\s*(B|GB|GIB)?$")
UNITS = {"B": 1.0, "GB": 1e9, "GIB": 2.0 ** 30}


def split_size(q: str) -> tuple[str, float]:
    """``UD-Q4_K_XL@22.8GB`` -> (``UD-Q4_K_XL``, 22.8e9); a name without ``@`` -> (name, 0)."""
    m = SIZE.match(q.strip().upper())
    if not m:
        if "@" in q:
            raise UserError(f"cannot read the size in quant {q!r}", "write it as NAME@<number>GB, GiB or B")
        return q, 0.0
    return m.group(1), float(m.group(2)) * UNITS[m.group(3) or "B"]


def ud_base(q: str) -> str | None:
    """The llama.cpp ftype a ``UD-*`` name is built on, None if ``q`` is no UD name."""
    if not q.upper().startswith("UD-"):
        return None
    rest = q.upper()[3:]
    return UD_XL.get(rest, rest)


def ik_output_type(ftype: str, cols: int) -> str:
    """The output tensor's type for an ik_llama.cpp ftype (``llama-quantize.cpp``: Q8_0 for rows not a multiple
    of 256)."""
    if cols % 256:
        return "Q8_0"
    return "Q5_K" if ftype in IK_OUTPUT_Q5 else ("IQ6_K" if ftype == "IQ6_K" else "Q6_K")


@dataclass(frozen=True)
class SizedScheme:
    """A quant scheme with every tensor scaled by one factor so that the resident weights add up to a stated size."""

    base: object          # QuantScheme
    factor: float
    name: str

    def format_for(self, role, layer, cols):
        return self.base.format_for(role, layer, cols)

    def tensor_bytes(self, role, layer, rows, cols) -> float:
        return self.base.tensor_bytes(role, layer, rows, cols) * self.factor

    def element_bytes(self, role, layer, cols: int = 4096) -> float:
        return self.base.element_bytes(role, layer, cols) * self.factor


def sized(base, target_bytes: float, spec, name: str) -> SizedScheme:
    """``base`` scaled to ``target_bytes`` of resident weights for ``spec`` (needs the model: a size alone says
    nothing without the tensors it is spread over)."""
    if spec is None:
        raise UserError(f"quant {name!r} states a file size: it needs a model to spread it over")
    return SizedScheme(base, target_bytes / resident_weight_bytes(spec, base), name)


def base_name(q: str) -> str:
    """``q`` without a stated size, upper case, a UD name as the ftype whose mix it takes."""
    q = split_size(q)[0].strip().upper()
    return ud_base(q) or q
