"""Names that come from someone else are names, never paths.

- ``remote_name``: a file name a remote party chose (a hub's shard list, a server's field) that tokspeed
  will use under a folder of its own. One component: no separator (``/`` or ``\\``), no absolute or drive
  prefix (``C:``), not ``.`` or ``..``, no control character, not empty, at most ``NAME_MAX`` bytes.
- ``host_header``: an HTTP Host header is exactly ``host`` or ``host:port``, the host from an allow-list
  and the port (when known) the server's own: no userinfo (``127.0.0.1:80@evil.example``), no path, no
  spaces, nothing after.
- ``catalog_ref``: a value a web client sent for a field that names a catalog entry. Catalog ids are plain
  words (``rtx-4090``, ``llama-3.1-8b``); anything that could make a lookup open a file (a separator, a
  ``.toml``/``.json``/``.gguf`` suffix, ``~``, ``local``) is refused before any lookup, and the refusal
  repeats only the value sent (nothing about the server's files).
"""

from __future__ import annotations

import re

from ..errors import UserError

NAME_MAX = 255                                   # bytes in one path component (Linux/macOS)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")
FILE_SUFFIXES = (".toml", ".json", ".gguf", ".safetensors", ".bin", ".yaml", ".yml")
LOCAL_WORDS = ("local",)                         # names that read this machine's own profile


def _show(value: str, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "…'"


def remote_name(name, what: str) -> str:
    """``name`` when it is one plain file name; UserError naming ``what`` otherwise."""
    if not isinstance(name, str) or not name:
        raise UserError(f"{what}: expected a file name, got {_show(str(name))}")
    bad = ("/" in name or "\\" in name or _DRIVE.match(name) or name in (".", "..")
           or _CONTROL.search(name) or len(name.encode("utf-8", "replace")) > NAME_MAX)
    if bad:
        raise UserError(f"{what}: {_show(name)} is not a plain file name (a path, a drive, '..' or a control "
                        "character); refused")
    return name


def catalog_ref(value: str, field: str) -> str:
    """``value`` stripped, when it can only be a catalog name; UserError naming ``field`` otherwise."""
    ref = str(value).strip()
    low = ref.lower()
    if (not ref or "/" in ref or "\\" in ref or ref.startswith(("~", ".")) or _DRIVE.match(ref)
            or _CONTROL.search(ref) or low.endswith(FILE_SUFFIXES) or low in LOCAL_WORDS):
        raise UserError(f"{field} must be a catalog id, got {_show(ref)}",
                        "this server reads no files by name: use a catalog id or an upload")
    return ref


_HOST = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?$")


def host_header(value: str, allowed: tuple[str, ...] | None, port: int | None = None) -> bool:
    """True when ``value`` is ``host[:port]`` with the host in ``allowed`` (lower-case names; brackets kept
    for IPv6, ``[::1]``) and the port, if given, equal to ``port``. ``allowed=None``: any well-formed host."""
    m = _HOST.match(value or "")
    if not m:
        return False
    if port is not None and m.group("port") is not None and int(m.group("port")) != port:
        return False
    return allowed is None or m.group("host").lower() in allowed
