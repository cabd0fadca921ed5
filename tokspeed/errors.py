"""The one exception type for mistakes in user input.

Anything raised as ``UserError`` reaches the user as one line on stderr and exit code 2
(see ``tokspeed.cli.main``); everything else is a bug and keeps its traceback.

The library speaks its own words: a parameter is named as the Python call names it, ``parallel='none'``
(a value) or ``top`` (the message's subject, with ``field='top'``), never as a command-line flag. The
surfaces translate with ``reword``: the CLI writes ``--parallel none`` (``tokspeed.cli.flag_words``), the web
API answers with its query field (mostly the same names) in ``field``.
"""

import difflib
import re


class UserError(ValueError):
    """Bad input from the user: unknown name, bad file, impossible value."""

    def __init__(self, message: str, suggestion: str | None = None, field: str | None = None):
        self.message = message
        self.suggestion = suggestion
        self.field = field          # the parameter at fault (``parallel``), where there is one
        super().__init__(message if not suggestion else f"{message} ({suggestion})")


def did_you_mean(name: str, choices, n: int = 3) -> str | None:
    """A 'did you mean ...' hint from the closest names, or None."""
    close = difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=n, cutoff=0.5)
    if not close:
        return None
    return "did you mean " + ", ".join(close) + "?"


def reword(text: str, names: dict[str, str], field: str | None = None, assign: str = " ") -> str:
    """``text`` in a surface's words: for each parameter in ``names`` (library name -> the surface's), ``name=value``
    becomes ``NAME`` + ``assign`` + value (quotes dropped when ``assign`` is a space: ``--parallel none``), a
    ```name``` becomes ``NAME``, and a message that starts with its ``field`` starts with that field's ``NAME``.
    Anything else (``tp=4,pp=2`` inside a value, prose) is left as it is."""
    if not text or not names:
        return text
    keys = "|".join(sorted(map(re.escape, names), key=len, reverse=True))

    def assigned(m):
        value = m.group(2).strip("'\"") if assign == " " else m.group(2)
        return f"{names[m.group(1)]}{assign}{value}"

    text = re.sub(rf"(?<![\w.=-])({keys})=('[^']*'|\"[^\"]*\"|[^\s,;()]*[^\s,;():.])", assigned, text)
    text = re.sub(rf"`({keys})`", lambda m: names[m.group(1)], text)
    if field in names and re.match(rf"{re.escape(field)}\b(?![=-])", text):
        text = names[field] + text[len(field):]
    return text
