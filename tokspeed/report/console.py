"""One place that makes the rich Console: ``COLUMNS`` wins when set (piped or not); piped output without
it is 200 wide so that tables are never squeezed. Tables are sized to that width, and every other line -- table
titles and captions, prose, the ``engine model: ...`` footer -- wraps at it too (at word boundaries; a word longer
than the width folds), so no line is wider than ``COLUMNS``, piped or not.

Every console is a ``guard.console.safe_console``: the terminal is a writer, so every segment of text it writes (not its own
styling) passes ``guard.escape.terminal`` (control, escape and bidirectional characters shown escaped) and
``guard.redact.known`` (secrets masked), whatever printed it: a table cell, a title, a note."""

from ..guard.console import safe_console
from .text import console_width


def make_console(stderr: bool = False):
    width = console_width()
    if width is not None:
        return safe_console(stderr=stderr, width=width, soft_wrap=False)
    c = safe_console(stderr=stderr, soft_wrap=False)
    if not c.is_terminal:       # piped without COLUMNS: 80, as a terminal's default width
        c = safe_console(stderr=stderr, width=80, soft_wrap=False)
    return c
