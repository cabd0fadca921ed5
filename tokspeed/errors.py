"""The one exception type for mistakes in user input.

Anything raised as ``UserError`` reaches the user as one line on stderr and exit code 2
(see ``tokspeed.cli.main``); everything else is a bug and keeps its traceback.
"""


class UserError(ValueError):
    """Bad input from the user: unknown name, bad file, impossible value."""

    def __init__(self, message: str, suggestion: str | None = None):
        self.message = message
        self.suggestion = suggestion
        super().__init__(message if not suggestion else f"{message} ({suggestion})")


def did_you_mean(name: str, choices, n: int = 3) -> str | None:
    """A 'did you mean ...' hint from the closest names, or None."""
    import difflib

    close = difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=n, cutoff=0.5)
    if not close:
        return None
    return "did you mean " + ", ".join(close) + "?"
