"""Entry point: builds the parser from one module per verb and turns user errors into one line + exit 2.

Each verb module defines ``add_parser(subparsers)`` and ``run(args) -> int``, and imports
anything heavy inside ``run`` so that ``tokspeed predict`` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import UserError
from ..report.text import wrapped

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
    """An error made of data stays one line: control characters (a newline, ESC) shown escaped."""
    from ..guard.escape import control_free

    return control_free(text)


class WholeWordsHelp(argparse.HelpFormatter):
    """Help text wrapped at word boundaries only: an id with a hyphen (lm-studio, llama.cpp-rocm) stays whole."""

    def _split_lines(self, text, width):
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text, width, indent):
        import textwrap

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


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tokspeed", description="Predict, measure and explain the cost of one LLM token.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"tokspeed {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for verb, mod in COMMANDS.items():
        module = importlib.import_module(f"tokspeed.cli.{mod}")
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except UserError as e:
        from .flag_words import cli_message

        sys.stderr.write(wrapped(f"tokspeed: error: {one_line(cli_message(e, parser))}") + "\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("tokspeed: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
