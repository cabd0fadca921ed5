"""The terminal as a writer: a rich Console whose every segment of text (not its own styling) passes
``guard.escape.terminal`` (control, escape and bidirectional characters shown escaped) and
``guard.redact.known`` (secrets masked), whatever printed it: a table cell, a title, a note."""
from rich.console import Console
from rich.segment import Segment

from .escape import terminal
from .redact import known


def safe_console(**kw):
    """A rich Console whose written text is made inert (escaped, secrets masked) segment by segment."""

    class SafeConsole(Console):
        def render_str(self, text, **kw):
            """Text from a string: escaped before rich reads it (rich drops BEL and BS silently otherwise)."""
            return super().render_str(terminal(known().text(text)), **kw)

        def _render_buffer(self, buffer):
            red = known()
            return super()._render_buffer(seg if seg.control else Segment(terminal(red.text(seg.text)), seg.style)
                                          for seg in buffer)

    return SafeConsole(**kw)
