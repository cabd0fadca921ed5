"""Files the user names (model files and folders, config.json, hardware TOML, run files, price lists,
shard indexes, manifests): looked at and read with every failure turned into one UserError line.

- ``path_kind`` replaces ``Path.exists/is_file/is_dir`` on a path the user typed: those raise on a name
  longer than NAME_MAX, hide a symlink loop or a directory without permission, and call a FIFO or a
  device "missing". It says what the path is instead.
- ``read_bytes`` reads a regular file whole, refusing one larger than ``MAX_DOCUMENT_BYTES`` before
  reading (a 1 GB sparse config.json fails at once, without allocating). Every reader of a whole file
  goes through it; readers of big files (GGUF, safetensors) read headers only, with their own caps.
- ``parse_json``: the one JSON gate (``guard.typed.loads``): nesting beyond 64 levels, a number beyond
  2**53 and ``NaN`` / ``Infinity`` / ``1e309`` are one line each. ``parse_toml``: nesting beyond Python's
  parser depth, an integer of more than 4,300 digits and ``inf``/``nan`` are one line each. The caps are listed in docs/limits.md.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import sys
import tomllib
from pathlib import Path

from .errors import UserError
from .guard.outputs import check_output, write_file
from .guard.typed import loads

MAX_DOCUMENT_BYTES = 16 * 2**20     # config.json, TOML, run JSON, shard index: real ones are < 2 MB
MAX_TOKENIZER_BYTES = 256 * 2**20   # tokenizer.json: the largest real ones (Gemma 3, 262k tokens) are ~33 MB
NAME_MAX = 255                      # bytes in one path component on Linux/macOS file systems
_MAX_DIGITS = getattr(sys.int_info, "default_max_str_digits", 4300)


def _short(text, n: int = 60) -> str:
    text = str(text)
    return text if len(text) <= n else text[:n] + f"… ({len(text)} characters)"


def path_kind(path, what: str = "file") -> str | None:
    """'file', 'dir', or None when nothing is there; UserError for what cannot be a file or folder:
    a name too long, a symlink loop, a dangling link, no permission, a FIFO, a device, a socket."""
    p = Path(path).expanduser()
    if "\x00" in str(path):
        raise UserError(f"{what} name holds a NUL character: {_short(repr(str(path)))}")
    try:
        st = p.stat()
    except FileNotFoundError:
        if os.path.islink(p):
            raise UserError(f"{what} {p} is a dangling symbolic link (it points to {os.readlink(p)}, which is missing)",
                            "download it again or fix the link") from None
        return None
    except NotADirectoryError:
        return None
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            longest = max((len(part.encode()) for part in p.parts), default=0)
            raise UserError(f"{what} name too long: {_short(path)}",
                            f"a path part has {longest} bytes; file names have at most {NAME_MAX}") from None
        if e.errno == errno.ELOOP:
            raise UserError(f"{what} {p} is a symbolic link loop", "fix or remove the link") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise UserError(f"cannot look at {what} {p}: permission denied",
                            "check the permissions of the folders on its path") from None
        raise UserError(f"cannot look at {what} {_short(p)}: {e.strerror}") from None
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise UserError(f"{what} {p} is {kind}, not a file", "give the path of a regular file")


def require_file(path, what: str = "file", hint: str | None = None) -> Path:
    """The path of an existing regular file, or one UserError line saying what is there instead."""
    kind = path_kind(path, what)
    if kind is None:
        raise UserError(f"no such {what}: {_short(path)}", hint)
    if kind == "dir":
        raise UserError(f"{what} {_short(path)} is a folder, not a file", hint)
    return Path(path).expanduser()


def read_bytes(path, what: str = "file", hint: str | None = None, cap: int = MAX_DOCUMENT_BYTES) -> tuple[Path, bytes]:
    """A regular file read whole, refused before reading when it is larger than ``cap``."""
    p = require_file(path, what, hint)
    try:
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > cap:
                raise UserError(f"{p}: {size / 2**20:,.1f} MiB is larger than a {what} may be "
                                f"({cap / 2**20:g} MiB)", "is this the right file?")
            data = f.read(cap + 1)
    except OSError as e:
        raise UserError(f"cannot read {what} {p}: {e.strerror}") from None
    if len(data) > cap:                                 # grew while we read it
        raise UserError(f"{p}: larger than a {what} may be ({cap / 2**20:g} MiB)")
    return p, data


def _decode(p: Path, data: bytes, fmt: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not valid {fmt} (not UTF-8 text: {e.reason})") from None


def _finite(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise UserError(f"the number {_short(text, 20)} is not finite (the largest is about 1.8e308)")
    return v


def _no_constant(name: str):
    raise UserError(f"{name} is not a number tokspeed can use")


def _parse(p: Path, fmt: str, parse):
    try:
        return parse()
    except UserError as e:
        raise UserError(f"{p}: {e.message}", e.suggestion) from None
    except RecursionError:
        raise UserError(f"{p}: not valid {fmt}: nested too deeply (Python's parser allows about "
                        f"{sys.getrecursionlimit():,} levels)") from None
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"{p}: not valid {fmt} ({str(e).splitlines()[0][:120]})") from None
    except ValueError as e:                             # int('1' * 5000): the int conversion limit
        if "digits" in str(e):
            raise UserError(f"{p}: a number has more than {_MAX_DIGITS:,} digits") from None
        raise UserError(f"{p}: not valid {fmt} ({str(e)[:120]})") from None


def parse_json(p: Path, data: bytes | str):
    """JSON through the one gate (``guard.typed.loads``): finite numbers within 2**53, nesting capped."""
    text = data if isinstance(data, str) else _decode(p, data, "JSON")
    return loads(text, str(p))


def parse_toml(p: Path, data: bytes | str) -> dict:
    text = data if isinstance(data, str) else _decode(p, data, "TOML")
    return _parse(p, "TOML", lambda: tomllib.loads(text, parse_float=_finite))


def read_json(path, what: str = "file", hint: str | None = None):
    p, data = read_bytes(path, what, hint)
    return p, parse_json(p, data)


def read_toml(path, what: str = "file", hint: str | None = None) -> tuple[Path, dict]:
    p, data = read_bytes(path, what, hint)
    return p, parse_toml(p, data)


def read_json_object(path, what: str = "file", hint: str | None = None) -> tuple[Path, dict]:
    p, data = read_json(path, what, hint)
    if not isinstance(data, dict):
        raise UserError(f"{p}: expected a JSON object, got {type(data).__name__}")
    return p, data


def check_writable(path, what: str = "file") -> Path:
    """Before a long run: the output can be written (``tokspeed.guard.outputs.check_output``)."""
    return check_output(path, what)


def write_text(path, text: str, what: str) -> Path:
    """Write a file the user named, creating its folder (``tokspeed.guard.outputs.write_file``)."""
    return write_file(path, text, what)
