"""Text in the terminal: printed, never interpreted; tables that fit the terminal without cutting a number.

``clean(s)`` makes any text from a file or a user safe to show: control characters (ANSI escapes, C1),
and the Unicode bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C: they reorder what follows,
"Trojan Source") become visible ``\\x1b`` / ``\\u202e`` escapes. Every cell a ``FitTable`` renders is a
``rich.text.Text`` (never parsed as markup), so ``[/bold]`` or ``[link=...]`` print as themselves.

``FitTable`` knows which columns hold numbers: those never wrap and never shrink below their widest value
(header words are folded instead). When the columns cannot all fit the console width, the ones marked
least important (``drop``, highest first) are left out and the table says so in its caption.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap

from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table
from rich.text import Text

# C0 controls but tab/newline, DEL, C1 controls; bidi embeddings/overrides/isolates/marks; zero-width joiners
# are harmless and kept.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(value) -> str:
    """``value`` as text with every control and bidi character shown as an escape (``\\x1b``, ``\\u202e``)."""
    s = "" if value is None else str(value)
    return _UNSAFE.sub(lambda m: ascii(m.group())[1:-1], s)


def one_line(value) -> str:
    """``clean`` on one line (tabs and newlines as spaces): for names in titles."""
    return " ".join(clean(value).split())


def markup_safe(value) -> str:
    """``clean`` text escaped for a rich markup string (e.g. inside a title built with styles)."""
    return escape(clean(value))


def styled(value, style: str = ""):
    """A rich Text of ``value`` (cleaned, never parsed as markup) in ``style``."""
    return Text(clean(value), style=style)


def unknown(v, fmt, missing: str = "unknown") -> str:
    """``fmt(v)``, or ``missing`` when the value is unknown (None): never 0, never a crash."""
    return missing if v is None else fmt(v)


def ttft_how(pred) -> str:
    """How a prediction's time to first token is made: a llama.cpp-style engine's prefill and then a sampling step;
    a fitted server engine's prefill steps (the step that ends the prompt samples the first token) and the decode steps
    of the tokens a streaming client receives before its first text."""
    if pred.ttft_s is None:
        return "prefill time unknown"
    lead = getattr(pred, "ttft_lead_tokens", 0.0)
    if lead:
        return f"prefill steps + {lead:g} decode steps to a client's first text"
    if pred.prefill.seconds is not None and pred.ttft_s == pred.prefill.seconds:
        return "prefill steps (the last one samples the first token)"
    return "prefill + one sampling step"


def console_width() -> int | None:
    """``COLUMNS`` when set to a number (any output), else None (``make_console`` decides)."""
    c = os.environ.get("COLUMNS", "").strip()
    if c.isdigit() and int(c) >= 20:
        return int(c)
    return None


def text_width() -> int:
    """The width messages wrap at: ``COLUMNS``, else the terminal's, else 80 (piped without COLUMNS)."""
    return console_width() or shutil.get_terminal_size((80, 24)).columns


def wrapped(line: str, width: int | None = None) -> str:
    """``line`` folded at word boundaries to ``width`` (``text_width()``), continuation lines indented two
    spaces; words are never broken (an id, a path, a flag stays whole even when longer than the width)."""
    width = width or text_width()
    if len(line) <= width:
        return line
    return textwrap.fill(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def say(text: str, kind: str = "") -> None:
    """One message on stderr (``tokspeed: [kind: ]text``), made safe (``one_line``), wrapped at the width
    (``wrapped``): COLUMNS, the terminal's, or 80 when piped; continuation lines start with two spaces, so a
    message is still one entry to grep (each starts ``tokspeed:``)."""
    sys.stderr.write(wrapped(f"tokspeed: {kind + ': ' if kind else ''}{one_line(text)}") + "\n")


class FitTable:
    """A table whose numbers are never cut: ``column(name, numeric=True)`` never wraps; columns with a
    ``drop`` rank are left out, highest rank first, when the console is too narrow for all of them."""

    def __init__(self, title: str = "", caption: str = "", show_header: bool = True):
        self.title, self.caption, self.show_header = title, caption, show_header
        self.cols: list[dict] = []
        self.rows: list = []          # list of cells, or None for a section break
        self.dropped: list[str] = []
        self.shown_caption = ""

    def column(self, name: str, numeric: bool = False, drop: int = 0, justify: str | None = None,
               min_width: int = 12, style: str = "", whole: bool = False) -> "FitTable":
        """``whole``: an id people copy (a model, a device): never folded, as wide as its longest cell."""
        self.cols.append(dict(name=name, numeric=numeric, drop=drop, justify=justify or ("right" if numeric else "left"),
                              min_width=min_width, style=style, whole=whole))
        return self

    def row(self, *cells) -> None:
        if len(cells) != len(self.cols):
            raise ValueError(f"{len(cells)} cells for {len(self.cols)} columns")
        self.rows.append([c if _is_text(c) else styled("" if c is None else c) for c in cells])

    def section(self) -> None:
        self.rows.append(None)

    def _needs(self, i: int) -> int:
        """The narrowest width of column ``i``: a numeric column's widest cell (or header word), a text
        column's longest word (up to 14 or ``min_width``: longer words fold)."""
        c = self.cols[i]
        cells = [r[i].plain for r in self.rows if r is not None]
        if c["numeric"] or c.get("whole"):
            need = max([_cell_len(s) for s in cells] + [max((_cell_len(w) for w in c["name"].split()), default=1)])
        else:
            longest = max([_cell_len(w) for s in cells for w in s.split()] + [1])
            head = max((_cell_len(w) for w in c["name"].split()), default=1)
            cap = max(c["min_width"], 14)       # a word up to 14 wide stays whole; longer ones fold
            need = max(min(longest, cap), min(head, cap), 1)
        return need

    def build(self, width: int):
        # a droppable column with nothing in it is left out silently
        keep = [i for i in range(len(self.cols))
                if not self.cols[i]["drop"] or any(r is not None and r[i].plain.strip() for r in self.rows)]
        empty = set(range(len(self.cols))) - set(keep)
        while True:
            total = sum(self._needs(i) for i in keep) + 3 * len(keep) + 1
            droppable = [i for i in keep if self.cols[i]["drop"]]
            if total <= width or not droppable:
                break
            worst = max(droppable, key=lambda i: (self.cols[i]["drop"], i))
            keep.remove(worst)
        # a narrow column dropped early may fit again once a wide one is gone: most important first
        for i in sorted((i for i in range(len(self.cols)) if i not in keep and i not in empty),
                        key=lambda i: self.cols[i]["drop"]):
            if sum(self._needs(k) for k in keep) + self._needs(i) + 3 * (len(keep) + 1) + 1 <= width:
                keep = sorted(keep + [i])
        self.dropped = [self.cols[i]["name"] for i in range(len(self.cols)) if i not in keep and i not in empty]
        caption = self.caption
        if self.dropped:
            note = f"(too narrow for: {', '.join(self.dropped)}; widen the terminal or set COLUMNS)"
            caption = f"{caption} {note}".strip()
        widths = self._widths(keep, width - 3 * len(keep) - 1)
        self.shown_caption = caption
        t = Table(show_header=self.show_header, header_style="bold")
        for i, w in zip(keep, widths):
            c = self.cols[i]
            header = c["name"]
            if c["numeric"] or c.get("whole"):
                header = "\n".join(textwrap.wrap(header, max(w, 1), break_long_words=False)) or header
                t.add_column(styled(header), justify=c["justify"], no_wrap=True, width=w, style=c["style"])
            else:
                t.add_column(styled(header), justify=c["justify"], overflow="fold", width=w, style=c["style"])
        for r in self.rows:
            if r is None:
                t.add_section()
            else:
                t.add_row(*(r[i] for i in keep))
        return t

    def _widths(self, keep: list[int], room: int) -> list[int]:
        """Fixed column widths: numbers at their widest value; text columns from their minimum towards their
        longest line, sharing what ``room`` is left evenly, the columns that want least filled first (so a
        short label column is whole before a long prose one takes the rest)."""
        need = [self._needs(i) for i in keep]
        want = []
        for i, n in zip(keep, need):
            cells = [r[i].plain for r in self.rows if r is not None] + [self.cols[i]["name"]]
            fixed = self.cols[i]["numeric"] or self.cols[i].get("whole")
            want.append(0 if fixed else max(n, max(_cell_len(s) for s in cells)) - n)
        spare = room - sum(need)
        give = [0] * len(keep)
        open_ = sorted((k for k in range(len(keep)) if want[k] > 0), key=lambda k: want[k])
        while spare > 0 and open_:
            share = max(spare // len(open_), 1)
            k = open_[0]
            if want[k] <= share:
                give[k] = want[k]
                spare -= want[k]
                open_.pop(0)
                continue
            for k in open_:
                g = min(share, want[k] - give[k], spare)
                give[k] += g
                spare -= g
            break
        return [n + g for n, g in zip(need, give)]

    def print(self, console) -> None:
        """Title, table, caption, each to the console's width (the title and caption wrap at word boundaries)."""
        t = self.build(console.width)
        if self.title:
            console.print(styled(self.title, "italic"), soft_wrap=False, overflow="fold")
        console.print(t)
        if self.shown_caption:
            console.print(styled(self.shown_caption, "dim"), soft_wrap=False, overflow="fold")


def _is_text(c) -> bool:
    return isinstance(c, Text)


def _cell_len(s: str) -> int:
    return max((cell_len(line) for line in s.split("\n")), default=0)
