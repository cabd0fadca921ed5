"""Files the user names (hardware TOML, config.json, run files, price lists): read or written with every
failure turned into one UserError line — missing, unreadable, not UTF-8, not valid TOML/JSON, not an object."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from .errors import UserError


def _text(path, what: str, hint: str | None, fmt: str) -> tuple[Path, str]:
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"no such {what}: {path}", hint)
    try:
        return p, p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not valid {fmt} (not UTF-8 text: {e.reason})") from None
    except OSError as e:
        raise UserError(f"cannot read {what} {p}: {e.strerror}") from None


def read_toml(path, what: str = "file", hint: str | None = None) -> tuple[Path, dict]:
    p, text = _text(path, what, hint, "TOML")
    try:
        return p, tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML ({e})") from None


def read_json_object(path, what: str = "file", hint: str | None = None) -> tuple[Path, dict]:
    p, text = _text(path, what, hint, "JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{p}: not valid JSON ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UserError(f"{p}: expected a JSON object, got {type(data).__name__}")
    return p, data


def write_text(path, text: str, what: str) -> Path:
    """Write a file the user named, creating its folder."""
    p = Path(path).expanduser()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write {what} {p}: {e.strerror}") from None
    return p
