"""One place that makes the rich Console: wide enough for tables when output is piped or captured."""


def make_console(stderr: bool = False):
    from rich.console import Console

    c = Console(stderr=stderr)
    if not c.is_terminal:
        c = Console(stderr=stderr, width=200)
    return c
