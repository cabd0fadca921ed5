"""The library's words in the command line's: a ``UserError`` names parameters as the Python call does
(``parallel='none' with gpus=2``, ``top must be at least 1``); the CLI says ``--parallel none with --gpus 2`` and
``--top must be at least 1``. The flags are read from the parser itself (``errors.reword`` does the rewriting).
"""

from __future__ import annotations

import argparse

from ..errors import UserError, reword

# library parameter -> the dest of the flag that sets it, where the two names differ
ALIASES = {"contexts": "context", "batches": "batch", "target_tok_s": "target", "flash_attention": "flash_attn",
           "column": "prompt_column"}


def flags_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> its long option string, over the parser and every subcommand's parser (the first one wins)."""
    out: dict[str, str] = {}
    todo = [parser]
    while todo:
        p = todo.pop(0)
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += list(dict.fromkeys(action.choices.values()))
                continue
            longs = [o for o in action.option_strings if o.startswith("--")]
            if longs and action.dest not in out:
                out[action.dest] = max(longs, key=len)
    for name, dest in ALIASES.items():
        if dest in out:
            out.setdefault(name, out[dest])
    return out


def cli_message(e: UserError, parser: argparse.ArgumentParser) -> str:
    """The one line the CLI prints for a UserError."""
    flags = flags_of(parser)
    message = reword(e.message, flags, e.field)
    return message if not e.suggestion else f"{message} ({reword(e.suggestion, flags)})"
