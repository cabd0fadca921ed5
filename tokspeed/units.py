"""Parsing and printing quantities with units (bytes, bandwidth, FLOP rates).

Decimal prefixes (GB = 1e9) are the vendors' convention for bandwidth and capacity;
binary prefixes (GiB = 2**30) are accepted where a user writes them.
"""

import re

from .errors import UserError

_PREFIX = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
           "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([kmgtp]i?)?\s*(b|bytes?)?\s*(/s|ps)?\s*$", re.I)


def parse_bytes(text: str | float | int, default_unit: str = "g", what: str = "size") -> float:
    """'24GB' -> 24e9, '24GiB' -> 24*2**30, '1008GB/s' -> 1.008e12; a bare number uses default_unit."""
    if isinstance(text, (int, float)):
        value, prefix = float(text), default_unit
    else:
        m = _NUM.match(str(text))
        if not m:
            raise UserError(f"cannot read {what} {text!r}", "write it like 24GB, 24GiB or 1008GB/s")
        value = float(m.group(1))
        prefix = (m.group(2) or ("" if m.group(3) else default_unit)).lower()
    if value <= 0:
        raise UserError(f"{what} must be positive, got {text!r}")
    return value * _PREFIX[prefix]


def fmt_bytes(n: float) -> str:
    """Human bytes in decimal units (GB = 1e9), the way vendors and the seeds count."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def fmt_rate(tok_s: float) -> str:
    if tok_s >= 100:
        return f"{tok_s:,.0f}"
    if tok_s >= 10:
        return f"{tok_s:.1f}"
    return f"{tok_s:.2f}"


def fmt_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"
