"""One place that makes the rich Console: ``COLUMNS`` wins when set (piped or not); piped output without
it is 200 wide so that tables are never squeezed. Tables are sized to that width; lines of prose and table
titles are not hard-wrapped (``soft_wrap``): the terminal folds them, and a piped line stays one line."""


def make_console(stderr: bool = False):
    from rich.console import Console

    from .text import console_width

    width = console_width()
    if width is not None:
        return Console(stderr=stderr, width=width, soft_wrap=True)
    c = Console(stderr=stderr, soft_wrap=True)
    if not c.is_terminal:
        c = Console(stderr=stderr, width=200, soft_wrap=True)
    return c
