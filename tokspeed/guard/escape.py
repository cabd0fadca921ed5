"""Text from data, made inert where it leaves tokspeed: a spreadsheet, the console, a chart, a page.

- ``csv_cell``: a cell beginning with ``= + - @`` (a formula to Excel, LibreOffice and Google Sheets), a tab
  or a carriage return gets a leading ``'`` (OWASP "CSV injection"); numbers are left as they are, so a
  negative number stays a number.
- ``markup``: rich console markup (``[bold]``, ``[/bold]``, ``[link=…]``) written literally.
- ``plain_figure``: matplotlib reads ``$…$`` as TeX and fails on unbalanced or unknown commands; every title,
  label, legend and annotation of a figure is drawn as typed: ``plots.canvas`` calls it before every save, so no
  chart depends on each call site.
- ``html``: ``& < > " '`` as entities (the bench-server HTML report writes every text through it).
- ``control_free``: control characters shown escaped (one-line error messages, the terminal).
"""

from __future__ import annotations

import html as _html
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def control_free(text: str) -> str:
    """``text`` with every control character (newline, carriage return, ESC, NUL...) written as an escape:
    a value from data can neither break a one-line message nor drive the terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def csv_cell(value):
    """``value`` for a CSV cell: strings that a spreadsheet would run as a formula get a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def markup(text) -> str:
    """``text`` with rich markup escaped (shown as typed, never interpreted)."""
    from rich.markup import escape

    return escape(str(text))


def plain_figure(fig):
    """Every text already in ``fig`` drawn literally (no mathtext); returns ``fig``."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        t.set_parse_math(False)
    return fig


def html(text) -> str:
    """``text`` for HTML text or a quoted attribute: ``& < > " '`` as entities."""
    return _html.escape(str(text), quote=True)
