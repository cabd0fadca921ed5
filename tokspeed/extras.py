"""Optional parts of tokspeed (pyproject's extras) checked before any work is done.

A verb that needs an optional package calls ``require("plot", "matplotlib")`` first: when the package
is not installed the user gets one line — ``this needs matplotlib: pip install 'tokspeed[plot]'`` —
and exit 2, not a ModuleNotFoundError after files were written. The check looks the module up without
importing it (``importlib.util.find_spec``), so it costs nothing when the package is there.
"""

from __future__ import annotations

import importlib.util

from .errors import UserError


def missing(*modules: str) -> list[str]:
    """The top-level modules of ``modules`` that cannot be imported here."""
    out = []
    for m in modules:
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):      # a parent package missing, or sys.modules[m] is None
            found = False
        if not found:
            out.append(m)
    return out


def require(extra: str, *modules: str, what: str = "this") -> None:
    """UserError unless every module is importable; ``extra`` is the pyproject extra that installs them."""
    gone = missing(*modules)
    if gone:
        raise UserError(f"{what} needs {', '.join(gone)}, which is not installed",
                        f"pip install 'tokspeed[{extra}]'")
