"""Entry point: builds the parser from one module per verb and turns user errors into one line + exit 2.

Each verb module defines ``add_parser(subparsers)`` and ``run(args) -> int``; only the verb named on the
command line is imported (see ``build_parser``), so ``tokspeed predict`` loads what predict needs and no more.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
import textwrap

from .. import __version__
from ..errors import UserError
from ..guard.escape import line
from ..report.text import wrapped
from .flag_words import cli_message

# verb -> module under tokspeed.cli
COMMANDS = {
    "predict": "predict",
    "sweep": "sweep",
    "compare": "compare",
    "models": "models",
    "hardware": "hardware",
    "inspect": "inspect",
    "tokens": "tokens",
    "probe": "probe",
    "measure": "measure",
    "compare-runs": "compare_runs",
    "bench-server": "bench_server",
    "plan": "plan",
    "explain": "explain",
    "report": "report",
    "web": "web",
    "fit": "fit",
    "serve": "serve",
}


def one_line(text: str) -> str:
    """An error made of data stays one line: control characters (a newline, ESC) and bidirectional
    overrides shown escaped, known secrets masked (the terminal is a writer: guard.redact)."""
    return line(text)


class WholeWordsHelp(argparse.HelpFormatter):
    """Help text wrapped at word boundaries only: an id with a hyphen (lm-studio, llama.cpp-rocm) stays whole."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False, break_long_words=False)


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one message on stderr (wrapped at the width), exit 2; its help
    wraps at whole words (``WholeWordsHelp``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", WholeWordsHelp)
        super().__init__(*args, **kwargs)

    def error(self, message):
        sys.stderr.write(wrapped(f"{self.prog}: error: {one_line(message)} (see `{self.prog} --help`)") + "\n")
        sys.exit(2)


def _verb_of(argv) -> str | None:
    """The verb named on the command line (the first word that is not an option), if it is one of ours."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, that verb's module alone is imported and builds its options, the others stand
    as names.

    Start-up time is why: a verb module imports what its ``run`` needs at its top, so importing all of them
    would load the whole package for ``tokspeed predict``. Without a verb (``tokspeed --help``) every module is
    imported to list its help line.
    """
    parser = OneLineParser(prog="tokspeed", description="Predict, measure and explain the cost of one LLM token.")
    parser.add_argument("--version", action="version", version=f"tokspeed {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for verb, mod in COMMANDS.items():
        if only is not None and verb != only:
            sub.add_parser(verb)
            continue
        module = importlib.import_module(f"tokspeed.cli.{mod}")
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser(_verb_of(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except UserError as e:
        sys.stderr.write(wrapped(f"tokspeed: error: {one_line(cli_message(e, parser))}") + "\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("tokspeed: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:        # the file system refused a path (a name too long, a loop, no space): one line
        sys.stderr.write(f"tokspeed: error: {one_line(os_message(e))}\n")
        return 2


def os_message(e: OSError) -> str:
    """An OSError that reached the top, in one line: what, on which path (shortened), and the limit when it is
    a name too long."""
    name = e.filename if e.filename is not None else ""
    text = str(name)
    shown = text if len(text) <= 80 else text[:80] + f"… ({len(text)} characters)"
    msg = f"cannot use {shown}: {e.strerror or type(e).__name__}" if text else f"{e.strerror or e}"
    if e.errno == errno.ENAMETOOLONG:
        longest = max((len(part.encode()) for part in text.split("/")), default=0)
        msg += f" (a path part has {longest} bytes; file names have at most 255)"
    return msg


if __name__ == "__main__":
    sys.exit(main())
