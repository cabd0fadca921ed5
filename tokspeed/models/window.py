"""The trained context window: one rule, stated once, applied by fit, sweep, predict and the web page.

A run fits a model's trained window when every token its sequence holds at the end is inside it:
``context + prompt + gen <= window`` (``context``: tokens already cached, llama-bench ``-d``; ``prompt``:
tokens prefilled; ``gen``: tokens generated). The window is the model's ``max_position_embeddings``
(``spec.max_context``); 0 means unknown, and then nothing is past it. Past the window the numbers assume the
engine extends it with RoPE scaling (llama.cpp ``--rope-scaling``, vLLM ``rope_scaling`` in the config).
"""

from __future__ import annotations

RULE = "a run fits a model's trained window when context + prompt + gen <= window"


def within(window: int, context: int, prompt: int, gen: int) -> bool:
    """True when ``context + prompt + gen`` tokens fit ``window`` (an unknown window, 0, holds anything)."""
    return not window or context + prompt + gen <= window


def longest_context(window: int, prompt: int, gen: int) -> int:
    """The largest ``context`` that fits ``window`` with this prompt and output (-1 when none does)."""
    return window - prompt - gen if window - prompt - gen >= 0 else -1


def arithmetic(window: int, prompt: int, gen: int) -> str:
    """The rule worked for one window: 'window 8,192 - prompt 0 - gen 1 = context up to 8,191'."""
    return f"window {window:,} - prompt {prompt:,} - gen {gen:,} = context up to {window - prompt - gen:,}"


def reason(model_id: str, window: int, context: int, prompt: int, gen: int) -> str:
    """'' when the run fits ``window``; else one sentence saying by how much and how to allow it."""
    if within(window, context, prompt, gen):
        return ""
    return (f"context {context:,} + prompt {prompt:,} + gen {gen:,} = {context + prompt + gen:,} tokens exceed "
            f"{model_id}'s trained window of {window:,} (allowed only with RoPE scaling: --rope-scaling)")
