"""Text from data, made inert where it leaves tokspeed: a spreadsheet, the console, a chart, a page.

- ``csv_cell``: a cell beginning with ``= + - @`` (a formula to Excel, LibreOffice and Google Sheets), a tab
  or a carriage return gets a leading ``'`` (OWASP "CSV injection"); numbers are left as they are, so a
  negative number stays a number.
- ``markup``: rich console markup (``[bold]``, ``[/bold]``, ``[link=…]``) written literally.
- ``mathtext``: matplotlib reads ``$…$`` as TeX and fails on unbalanced or unknown commands; ``$`` is escaped.
  ``plain_figure`` does it for a whole figure at once (every title, label, legend and annotation is drawn
  as typed): ``plots.canvas`` calls it before every save, so no chart depends on each call site.
- ``html``: ``& < > " '`` as entities.
"""

from __future__ import annotations

import html as _html

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """``value`` for a CSV cell: strings that a spreadsheet would run as a formula get a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def markup(text) -> str:
    """``text`` with rich markup escaped (shown as typed, never interpreted)."""
    from rich.markup import escape

    return escape(str(text))


def mathtext(text) -> str:
    """``text`` with matplotlib mathtext switched off: each ``$`` escaped."""
    return str(text).replace("$", r"\$")


def plain_figure(fig):
    """Every text already in ``fig`` drawn literally (no mathtext); returns ``fig``."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        t.set_parse_math(False)
    return fig


def html(text) -> str:
    return _html.escape(str(text), quote=True)
