"""Text from data, made inert where it leaves tokspeed: a spreadsheet, the console, a chart, a page.

- ``csv_cell``: a cell beginning with ``= + - @`` (a formula to Excel, LibreOffice and Google Sheets), a tab
  or a carriage return gets a leading ``'`` (OWASP "CSV injection"); numbers are left as they are, so a
  negative number stays a number.
- ``markup``: rich console markup (``[bold]``, ``[/bold]``, ``[link=…]``) written literally.
- ``plain_figure``: matplotlib reads ``$…$`` as TeX and fails on unbalanced or unknown commands; every title,
  label, legend and annotation of a figure is drawn as typed: ``plots.canvas`` calls it before every save, so no
  chart depends on each call site.
- ``html``: ``& < > " '`` as entities (the bench-server HTML report writes every text through it).
- ``control_free``: control characters shown escaped (one-line error messages).
- ``terminal``: what ``control_free`` does, and the bidirectional and invisible format characters
  (U+202A-U+202E, U+2066-U+2069, U+200B-U+200F, U+061C, U+FEFF) shown as ``\\u202e``: text from data can neither
  drive the terminal nor reorder what is shown. ``guard.console.safe_console`` applies it to every segment
  of text a rich console writes (not to the console's own styling), so every table and line is covered at
  the writer, whatever printed it.
"""

from __future__ import annotations

import html as _html
import re

from rich.markup import escape

from .redact import known

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_TERMINAL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]")


def control_free(text: str) -> str:
    """``text`` with every control character (newline, carriage return, ESC, NUL...) written as an escape:
    a value from data can neither break a one-line message nor drive the terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def _escaped(ch: str) -> str:
    return repr(ch)[1:-1] if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


MAX_WORD = 512          # characters of one word (no space) shown on a terminal: rich folds a longer one in
                        # quadratic time (70,000 characters took 80 s), and no real name or path is that long
_LONG_WORD = re.compile(r"\S{%d,}" % (MAX_WORD + 1))


def terminal(text: str, newlines: bool = True) -> str:
    """``text`` for a terminal: control characters (ESC, CR, NUL, C1), bidirectional overrides and
    invisible format characters shown escaped; a newline kept when ``newlines`` (the console's own line
    breaks), escaped otherwise; a word longer than MAX_WORD cut, saying its length."""
    text = str(text)
    out = _TERMINAL.sub(lambda m: _escaped(m.group()), text)
    if len(out) > MAX_WORD:
        out = _LONG_WORD.sub(lambda m: m.group()[:MAX_WORD] + f"… ({len(m.group()):,} characters)", out)
    return out if newlines else out.replace("\n", "\\n")


def line(text) -> str:
    """One line for the terminal: ``terminal`` with newlines escaped, known secrets masked (the terminal is a
    writer: ``guard.redact``)."""
    return terminal(known().text(str(text)), newlines=False)


def csv_cell(value):
    """``value`` for a CSV cell: strings that a spreadsheet would run as a formula get a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def markup(text) -> str:
    """``text`` with rich markup escaped (shown as typed, never interpreted)."""
    return escape(str(text))


def plain_figure(fig):
    """Every text already in ``fig`` drawn literally (no mathtext); returns ``fig``."""
    from matplotlib.text import Text  # lazy: optional dependency (matplotlib, the plot extra)

    for t in fig.findobj(Text):
        t.set_parse_math(False)
    return fig


def html(text) -> str:
    """``text`` for HTML text or a quoted attribute: ``& < > " '`` as entities."""
    return _html.escape(str(text), quote=True)
