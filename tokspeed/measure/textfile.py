"""Writing a text file the user named (profile, run file): folders created, failures as UserError."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError


def write_text(path, text: str, what: str) -> Path:
    p = Path(path).expanduser()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write {what} {p}: {e.strerror}") from None
    return p
