"""One place that makes the rich Console: ``COLUMNS`` wins when set (piped or not); piped output without
it is 200 wide so that tables are never squeezed. Tables are sized to that width, and every other line -- table
titles and captions, prose, the ``engine model: ...`` footer -- wraps at it too (at word boundaries; a word longer
than the width folds), so no line is wider than ``COLUMNS``, piped or not."""


def make_console(stderr: bool = False):
    from rich.console import Console

    from .text import console_width

    width = console_width()
    if width is not None:
        return Console(stderr=stderr, width=width, soft_wrap=False)
    c = Console(stderr=stderr, soft_wrap=False)
    if not c.is_terminal:       # piped without COLUMNS: 80, as a terminal's default width
        c = Console(stderr=stderr, width=80, soft_wrap=False)
    return c
