"""The one TOML writer: the tables the scripts write (fitted.toml, bands.toml, the hardware catalog, the serving
constants) and the hardware profile ``tokspeed probe`` / ``measure --calibrate`` keep (``tomllib`` reads, nothing in
the standard library writes).

``dumps(data)``: top-level scalars first, then each dict as a ``[table]`` (nested dicts as ``[table.sub]``), each list
of dicts as ``[[array]]`` tables; an ``Inline`` dict is written on its key's line (``{ a = 1, b = 2 }``, keys
sorted). ``number`` formats floats (default: shortest ``repr``); strings are TOML basic strings (JSON escapes,
which TOML shares, non-ASCII kept).
"""

from __future__ import annotations

import json
import math
import re
from typing import Callable

BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class Inline(dict):
    """A dict written as an inline table on its key's line, keys sorted."""


def key(k, quote_digits: bool = False) -> str:
    """A key as TOML writes it: bare where it may be (``quote_digits``: an all-digit key quoted as well)."""
    k = str(k)
    if BARE_KEY.match(k) and not (quote_digits and k.isdigit()):
        return k
    return json.dumps(k, ensure_ascii=False)


def repr_number(v: float) -> str:
    return repr(float(v))


def sig6(v: float) -> str:
    """Six significant digits (a probe's figures, bands.toml's factors)."""
    return repr(float(f"{v:.6g}"))


def value(v, number: Callable[[float], str] = repr_number) -> str:
    """One value: bool, int, float (``number``; NaN and infinities, which a table should not hold, as 0.0), string,
    list, Inline dict."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return number(v) if math.isfinite(v) else "0.0"
    if isinstance(v, Inline):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {value(x, number)}" for k, x in sorted(v.items())) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x, number) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _is_table(v) -> bool:
    return isinstance(v, dict) and not isinstance(v, Inline)


def _is_array_of_tables(v) -> bool:
    return isinstance(v, list) and bool(v) and all(_is_table(x) for x in v)


def _body(data: dict, number) -> list[str]:
    return [f"{key(k)} = {value(v, number)}" for k, v in data.items()
            if not _is_table(v) and not _is_array_of_tables(v)]


def _tables(path: list[str], data: dict, number, blank: bool) -> list[str]:
    out = []
    for k, v in data.items():
        name = path + [key(k, quote_digits=bool(path))]
        if _is_table(v):
            out += ([""] if blank else []) + [f"[{'.'.join(name)}]"] + _body(v, number)
            out += _tables(name, v, number, blank)
        elif _is_array_of_tables(v):
            for item in v:
                out += ([""] if blank else []) + [f"[[{'.'.join(name)}]]"] + _body(item, number)
    return out


def dumps(data: dict, number: Callable[[float], str] = repr_number, header: str = "", blank: bool = True) -> str:
    """``data`` as TOML text, after ``header`` (comment lines, written as given); ``blank``: a blank line before each
    table header."""
    lines = _body(data, number) + _tables([], data, number, blank)
    return header + "\n".join(lines) + "\n"
