"""The run a prediction is for: tokens already cached, prefilled, generated, and concurrent sequences.

``Workload`` validates itself once, in the library's words (the CLI adds its flag names), and owns the
two loops over a run: the prefill micro-batches (``prefill_chunks``, the one definition every caller
uses) and the decode depths (step i of ``gen`` attends ``context + prompt + i`` cached tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UserError

# The run defaults, defined once (CLI flags, the web calculator and the Python API use these):
# llama-bench's -p 512 / -n 128, and llama.cpp as the engine most people run locally (serve's default engine is
# capabilities.toml's [default_engine]).
DEFAULT_PROMPT = 512
DEFAULT_GEN = 128
DEFAULT_ENGINE = "llama.cpp"
UBATCH = 512      # tokens per prefill micro-batch (llama.cpp -ub default, vLLM chunked prefill ~512)
NBATCH = 2048     # tokens per llama_decode call of a prompt (llama.cpp -b default, common/common.h n_batch)
# llama.cpp's -ub and -b as a run sets them: llama-bench (tools/llama-bench) hands the prompt to llama_decode in calls
# of n_batch tokens, and each call runs as micro-batches (ubatches) of at most n_ubatch tokens, a graph pass each:
# src/llama-context.cpp (llama_context constructor) clamps ``n_ubatch = min(n_batch, n_ubatch)``, and a ubatch
# never spans two calls (llama_context::decode splits the call's batch with llama_batch_allocr).
MAX_TOKENS = 1 << 31
# A prompt is timed pass by pass (``prefill_chunks``: one ledger each, ~0.1 ms): a prompt of more micro-batches than
# this is refused before any work, so no file or flag (a llama-bench file's n_prompt 10,000,000 at n_ubatch 1, a
# calibration row's) buys hours of CPU. Policy (guard/limits.py's way): 16.8 M tokens at llama.cpp's -ub 512, above
# the longest trained window (Llama 4 Scout's 10 M: 19,532 micro-batches).
MAX_PREFILL_PASSES = 1 << 15
# llama.cpp's -fa as the CLI and the web page take it: auto is the build's and front end's own default
FLASH_ATTN = {"auto": None, "on": True, "off": False}


def engine_build(engine_version: str | None = None, flash_attention: bool | None = None) -> dict:
    """The ``predict`` keywords of an engine's build (``engine_version``) and llama.cpp's -fa
    (``flash_attention``), only those that are set: None (or an empty version) is the default."""
    return {k: v for k, v in (("engine_version", engine_version or None), ("flash_attention", flash_attention))
            if v is not None}


def check_count(name: str, v, lo: int) -> int:
    """``v`` as a token or sequence count: an integer >= ``lo`` (and below 2**31)."""
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise UserError(f"{name} must be an integer >= {lo}, got {v!r}")
    if v > MAX_TOKENS:
        raise UserError(f"{name} {v} is beyond any model's reach", f"use a value below {MAX_TOKENS:,}")
    return v


def prefill_pass_count(prompt: int, ubatch: int, n_batch: int) -> int:
    """The micro-batches ``Workload.prefill_chunks`` cuts a prompt into, counted without walking them: each call of
    ``n_batch`` tokens in chunks of ``min(ubatch, n_batch)``, the last call's remainder likewise."""
    step = min(ubatch, n_batch)
    calls, rest = divmod(prompt, n_batch)
    return calls * -(-n_batch // step) + -(-rest // step)


def one_micro_batch(prompt: int, ubatch: int, n_batch: int) -> bool:
    """Whether a prompt of ``prompt`` tokens runs as one micro-batch: no longer than a micro-batch of ``ubatch`` tokens
    within a call of ``n_batch`` (``Workload.prefill_chunks`` cuts at both), counted without walking the chunks."""
    return prompt <= min(ubatch, n_batch)


@dataclass(frozen=True)
class Workload:
    prompt: int = DEFAULT_PROMPT   # tokens prefilled
    gen: int = DEFAULT_GEN         # tokens generated (decode tok/s is their average)
    context: int = 0               # tokens already in the KV cache before the run
    batch: int = 1                 # concurrent sequences
    ubatch: int = UBATCH           # llama.cpp -ub: tokens per prompt micro-batch (one graph pass)
    n_batch: int = NBATCH          # llama.cpp -b: tokens per llama_decode call of the prompt

    def __post_init__(self):
        for name, lo in (("prompt", 0), ("gen", 0), ("context", 0), ("batch", 1), ("ubatch", 1), ("n_batch", 1)):
            check_count(name, getattr(self, name), lo)
        passes = prefill_pass_count(self.prompt, self.ubatch, self.n_batch)
        if passes > MAX_PREFILL_PASSES:
            raise UserError(f"a prompt of {self.prompt:,} tokens at ubatch={self.ubatch} and n_batch={self.n_batch} "
                            f"is {passes:,} micro-batches; tokspeed times at most {MAX_PREFILL_PASSES:,}",
                            "use a larger `ubatch` (llama.cpp's default is 512)")

    @property
    def micro_batch(self) -> int:
        """Tokens per prompt micro-batch as llama.cpp runs it: ``min(n_batch, ubatch)`` (llama-context.cpp)."""
        return min(self.ubatch, self.n_batch)

    def splits_prompt(self, ubatch: int | None = None) -> bool:
        """Whether ``prefill_chunks(ubatch)`` cuts the prompt into more than one micro-batch (``one_micro_batch``)."""
        return not one_micro_batch(self.prompt, self.micro_batch if ubatch is None else ubatch, self.n_batch)

    def starts_call(self, depth: int) -> bool:
        """Whether the micro-batch at KV ``depth`` begins a llama_decode call (every ``n_batch`` prompt tokens)."""
        return (depth - self.context) % self.n_batch == 0

    @property
    def tokens(self) -> int:
        """Total context per sequence at the end of the run."""
        return self.context + self.prompt + self.gen

    @property
    def decode_first(self) -> int:
        """KV depth of the first generated token."""
        return self.context + self.prompt

    @property
    def decode_steps(self) -> int:
        """Decode steps averaged over (at least one: a run that generates nothing still reports decode)."""
        return max(self.gen, 1)

    def prefill_chunks(self, ubatch: int | None = None):
        """(depth, tokens) of each prefill micro-batch of the prompt, in order: calls of ``n_batch`` tokens, each
        split into micro-batches of ``ubatch`` (default: the run's ``micro_batch``; a server engine passes its token
        budget per step)."""
        ubatch = self.micro_batch if ubatch is None else ubatch
        done = 0
        while done < self.prompt:
            call_end = min(self.prompt, (done // self.n_batch + 1) * self.n_batch)
            chunk = min(ubatch, call_end - done)
            yield self.context + done, chunk
            done += chunk
