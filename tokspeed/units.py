"""Parsing and printing quantities with units (bytes, bandwidth, FLOP rates, token counts).

Rates keep the vendors' decimal prefixes (GB/s = 1e9 B/s); a device's memory capacity is binary, whatever its
label writes (an "80 GB" H100 holds 80 GiB = 80 x 2**30 bytes: DRAM and HBM come in powers of two per chip), so
``parse_capacity`` reads a capacity's GB as GiB. Sizes print in decimal units (``fmt_bytes``: GB = 1e9 bytes,
the unit the text names). Token counts take K and M
as 1024 and 1024**2 (``32K`` = 32,768, as llama.cpp and model cards write context lengths).

Every number a user types goes through ``parse_number`` (any real), ``parse_count`` (tokens,
sequences, repeats) or ``parse_bytes`` (sizes and rates): what cannot be a number — ``nan``, ``inf``,
``1e400`` (overflows to inf), ``2.5`` tokens, an unknown unit — is one UserError naming the flag.
Ranges (a batch of at least 1, a positive rate) are the library's to check, not the parser's.
"""

import math
import re

from .errors import UserError

GIB = 2**30               # one GiB: the unit of every memory capacity (Hardware.memory_gb)
_PREFIX = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
           "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([kmgtp]i?)?\s*(b|bytes?)?\s*(/s|ps)?\s*$", re.I)


_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([km]?)\s*$", re.I)
_COUNT_PREFIX = {"": 1, "k": 1024, "m": 1024 * 1024}
MAX_COUNT = 2**53          # the largest whole number a float (and JSON) holds exactly


def _short(text) -> str:
    text = str(text)
    return text if len(text) <= 40 else text[:40] + "…"


def parse_number(text: str | float | int, what: str = "number") -> float:
    """A finite real number: '2.5', '1e3'. nan, inf and overflow ('1e400') are refused."""
    if isinstance(text, bool):
        raise UserError(f"{what} must be a number, got {text!r}")
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UserError(f"{what} must be a number, got {_short(text)!r}") from None
    if not math.isfinite(value):
        raise UserError(f"{what} must be a finite number, got {_short(text)!r}")
    return value


def parse_count(text: str | int, what: str = "count") -> int:
    """A whole number of tokens, sequences or repeats, with an optional K (1024) or M (1024**2):
    '4096', '32K', '1.5K', '1e3'. Negative, fractional, nan, inf and overflow are refused."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = float(text) if abs(text) <= MAX_COUNT else math.inf
        mult = 1
    else:
        m = _COUNT.match(str(text))
        if not m:
            hint = "a count cannot be negative" if str(text).strip().startswith("-") else "write it like 4096, 32K or 1M"
            raise UserError(f"{what} must be a whole number, got {_short(text)!r}", hint)
        value, mult = float(m.group(1)), _COUNT_PREFIX[m.group(2).lower()]
    value *= mult
    if not math.isfinite(value) or value > MAX_COUNT:
        raise UserError(f"{what} {_short(text)} is too large", f"at most {MAX_COUNT:,} (2**53)")
    if not value.is_integer():
        raise UserError(f"{what} must be a whole number, got {_short(text)!r}")
    if value < 0:
        raise UserError(f"{what} must not be negative, got {_short(text)!r}")
    return int(value)


def parse_counts(text: str, what: str = "counts") -> list[int]:
    """'1024,8K,128K' -> [1024, 8192, 131072]."""
    parts = [p for p in str(text).split(",") if p.strip()]
    if not parts:
        raise UserError(f"{what} is empty", "write numbers like 1024,8K,128K")
    return [parse_count(p, what) for p in parts]


def parse_bytes(text: str | float | int, default_unit: str = "g", what: str = "size") -> float:
    """'24GB' -> 24e9, '24GiB' -> 24*2**30, '1008GB/s' -> 1.008e12; a bare number uses default_unit.

    A size or rate is finite and at least one byte (per second): under that no memory exists, and a
    bandwidth of 1e-300 B/s would turn every speed into 0 and every time into infinity."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, prefix = float(text), default_unit
    else:
        m = _NUM.match(str(text))
        if not m:
            raise UserError(f"cannot read {what} {_short(text)!r}", "write it like 24GB, 24GiB or 1008GB/s")
        value = float(m.group(1))
        prefix = (m.group(2) or ("" if m.group(3) else default_unit)).lower()
    if value <= 0:
        raise UserError(f"{what} must be positive, got {_short(text)!r}")
    out = value * _PREFIX[prefix]
    if not math.isfinite(out):
        raise UserError(f"{what} {_short(text)!r} is too large to be a number")
    if out < 1:
        raise UserError(f"{what} {_short(text)!r} is less than one byte", "check the unit (e.g. 1008GB/s)")
    return out


def parse_capacity(text: str | float | int, what: str = "memory") -> float:
    """A device's memory capacity in bytes, as its label means it: '24GB' and '24GiB' -> 24 * 2**30 (memory is
    made in binary sizes and sold under decimal letters: an RTX 4090's 12 x 16 Gbit chips are "24 GB"), '512MB' ->
    512 * 2**20; a bare number is GB. Rates (GB/s) stay decimal: ``parse_bytes``."""
    if isinstance(text, str):
        m = _NUM.match(text)
        if m and m.group(2) and not m.group(2).lower().endswith("i") and not m.group(4):
            text = text[:m.start(2)] + m.group(2) + "i" + text[m.end(2):]
    return parse_bytes(text, default_unit="gi", what=what)


def fmt_bytes(n: float) -> str:
    """Human bytes in decimal units (GB = 1e9), as the text says: an "80 GB" H100's 80 GiB print as 85.90 GB."""
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
