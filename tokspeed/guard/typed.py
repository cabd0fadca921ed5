"""The one gate for documents and numbers that come from outside (docs/security.md, "Gates").

Every JSON text tokspeed reads from a file, a server, a hub or a web client is parsed here (``loads``) and
nowhere else: nesting is capped, ``NaN``/``Infinity`` are refused, and every number lies in the range a
quantity tokspeed reads can physically take -- zero, or a magnitude in ``[2**-53, 2**53]``. A token count,
a byte count or a time is at most 2**53 (the largest whole number JSON carries exactly); a ratio or product
of two such numbers stays finite, so no division downstream turns ``1e300 / 1e-300`` into ``inf``.

The typed readers (``count``, ``seconds``, ``rate``, ``text``) then give each field its own range: a token
count is a whole number in ``[0, 2**53]``, a duration in ``[0, MAX_SECONDS]``, a rate finite and >= 0, a
string is data (never markup). ``field`` reads one named field of an object and says which field when it is
missing or of the wrong kind, in one line; ``fields`` checks an object against a schema (name -> reader)
and refuses a field it does not know when the kind is strict.
"""

from __future__ import annotations

import json
import math
import re
import sys

from ..errors import UserError

MAX_COUNT = 2**53                 # tokens, bytes, entries: the largest whole number JSON holds exactly
MAX_MAGNITUDE = float(2**53)      # any number from outside: ratios and products of two stay finite
MIN_MAGNITUDE = 2.0**-53          # smaller non-zero magnitudes are noise (one part in 2**53 of a unit)
MAX_SECONDS = 86_400.0            # a duration inside one run or request: a day (runs end by --duration/timeouts)
MAX_DEPTH = 64                    # nesting of one document: real ones nest 3-6 levels
# objects and lists in one document: each costs 56-64 bytes of memory however few bytes spell it ("{}," is 3), so a
# 16 MiB file of empty objects would take ~450 MB. The largest real document is a safetensors header at MAX_TENSORS
# (2**18) tensors, three per tensor (guard.limits)
MAX_CONTAINERS = 2**20
# a JSON string literal, escapes included; one left open runs to the end of the text, so every quote starts a
# match and the scan stays linear (a pattern that could fail would retry from each escaped quote: quadratic)
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.|\\\Z)*(?:"|\Z)', re.S)
_MAX_DIGITS = getattr(sys.int_info, "default_max_str_digits", 4300)


class OutOfRange(ValueError):
    """A number beyond what any field can physically hold (raised while parsing)."""


def _show(text, n: int = 24) -> str:
    text = str(text)
    return text if len(text) <= n else text[:n] + f"… ({len(text)} characters)"


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 17:                               # more digits than 2**53 has: refused before int() runs
        raise OutOfRange(f"a number has {digits:,} digits, beyond 2**53 (no count, size or time is that large)")
    v = int(text)
    if abs(v) > MAX_COUNT:
        raise OutOfRange(f"the number {_show(text)} is beyond 2**53 (no count, size or time is that large)")
    return v


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise OutOfRange(f"the number {_show(text)} is not finite")
    if abs(v) > MAX_MAGNITUDE:
        raise OutOfRange(f"the number {_show(text)} is beyond 2**53 (no count, size or time is that large)")
    if v and abs(v) < MIN_MAGNITUDE:
        return 0.0                                # below one part in 2**53: zero, never a divisor of 1e-300
    return v


def _constant(name: str):
    raise OutOfRange(f"{name} is not a number tokspeed can use")


def _containers(text: str) -> int:
    """Objects and lists in ``text``: its brackets outside strings (``JSON_STRING``, as ``_depth_ok``)."""
    rest = JSON_STRING.sub("", text)
    return rest.count("[") + rest.count("{")


def _depth_ok(text: str, limit: int) -> bool:
    """Whether the brackets outside strings nest at most ``limit`` deep (a bracket inside a JSON string, escaped
    quotes included, is text: a prompt of 100 "[" is not 100 levels). The strings go first (``JSON_STRING``,
    in C), then what is left is walked a character at a time (no list of it is built)."""
    depth = 0
    for ch in JSON_STRING.sub("", text):
        if ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def parse(text: str | bytes, max_depth: int = MAX_DEPTH):
    """The JSON value of ``text`` with bounded numbers and nesting; ValueError (one line, no position
    noise) when it is not such a value. For callers that record a failure instead of stopping (a server's
    stream, a torn line of a run file)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    brackets = text.count("[") + text.count("{")
    if brackets > max_depth and not _depth_ok(text, max_depth):
        raise ValueError(f"nested too deeply (more than {max_depth} levels)")
    if brackets > MAX_CONTAINERS and _containers(text) > MAX_CONTAINERS:
        raise ValueError(f"more than {MAX_CONTAINERS:,} objects and lists (no document tokspeed reads holds that "
                         "many; each would cost memory far beyond its bytes)")
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except OutOfRange:
        raise
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except ValueError as e:                        # int() digit limit and the like
        raise ValueError(f"not valid JSON ({str(e)[:80]})") from None


def loads(text: str | bytes, where: str, max_depth: int = MAX_DEPTH, hint: str | None = None):
    """``parse`` with every failure one UserError naming ``where``."""
    try:
        return parse(text, max_depth)
    except ValueError as e:
        raise UserError(f"{where}: {e}", hint) from None


# ---- typed readers: one per kind of quantity -----------------------------------------------------------

def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def count(v, limit: int = MAX_COUNT):
    """A whole number in ``[0, limit]`` (tokens, bytes, entries); None otherwise."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer() and abs(v) <= MAX_COUNT:
        v = int(v)
    return v if isinstance(v, int) and 0 <= v <= limit else None


def seconds(v, limit: float = MAX_SECONDS):
    """A duration in ``[0, limit]`` seconds; None otherwise."""
    return float(v) if _real(v) and 0 <= v <= limit else None


def rate(v):
    """A finite rate >= 0 within 2**53 (tok/s, requests/s, a ratio); None otherwise."""
    return float(v) if _real(v) and 0 <= v <= MAX_MAGNITUDE else None


def number(v):
    """Any finite number within +-2**53; None otherwise."""
    return float(v) if _real(v) and abs(v) <= MAX_MAGNITUDE else None


def text(v, limit: int = 4096):
    """A string (data, never markup), at most ``limit`` characters; None for anything else."""
    return v[:limit] if isinstance(v, str) else None


_KIND_WORDS = {count: "a whole number >= 0", seconds: f"a time in seconds (0 to {MAX_SECONDS:,.0f})",
               rate: "a finite number >= 0", number: "a finite number", text: "a string"}


def field(obj, name: str, reader, where: str, required: bool = True):
    """``reader(obj[name])``; UserError naming the field when it is missing (and ``required``) or not of
    its kind. Absent and not required: None."""
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected an object, got {type(obj).__name__}")
    if name not in obj or obj[name] is None:
        if required:
            raise UserError(f"{where}: field {name!r} is missing", "is this the right file?")
        return None
    got = reader(obj[name])
    if got is None:
        raise UserError(f"{where}: field {name!r} should be {_KIND_WORDS.get(reader, 'of another kind')}, "
                        f"got {_show(repr(obj[name]), 40)}")
    return got


def fields(obj, schema: dict, where: str, strict: bool = False) -> dict:
    """Every field of ``schema`` (name -> (reader, required)) read from ``obj``; with ``strict``, a field
    the schema does not name is refused, naming it."""
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected an object, got {type(obj).__name__}")
    if strict:
        for k in obj:
            if k not in schema:
                raise UserError(f"{where}: unknown field {_show(repr(k), 40)}", "is this the right file?")
    return {k: field(obj, k, reader, where, required) for k, (reader, required) in schema.items()}
