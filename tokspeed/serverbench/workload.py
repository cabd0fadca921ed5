"""What each request asks for: prompt and output lengths, and the prompt text (synthetic or from a file).

A length is ``N`` (fixed) or ``LO-HI`` (uniform integers, both ends included), drawn from a seeded
``random.Random`` so a run is reproducible.

Synthetic prompts are common short English words, one word per target token, each prompt starting
with its request number so that no two share a prefix (prefix caching would otherwise skip
prefill). With a tokenizer (``--tokenizer``) the text is cut to exactly the target count as that
tokenizer counts it (BOS included when the model adds one, as the server counts it): the cut is
made between characters, never inside a multi-byte character (see ``cut_to_tokens``).

``--shared-prefix N``: every prompt starts with the same N-token system text (one long system
prompt shared by all users: what a prefix cache is for); chat APIs get it as the system message.

Prompt files (``--prompts FILE``):
- JSONL: one object per line with a ``prompt`` (or ``text``) field, or a chat transcript with
  ``messages`` (or ``conversation`` / ``turns``): a list of ``{"role", "content"}``; the user turns
  are sent in order, each with the history before it (multi-turn).
- CSV: a header row with a ``prompt`` column (``--prompt-column`` names another).
Caps: 64 MiB per file, 100,000 prompts.
"""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..guard.limits import csv_dict_rows, json_line

WORDS = ("the of and to in is was for on are with as at be this have from or one had by word but not "
         "what all were we when your can said there use an each which she do how their if will up other "
         "about out many then them these so some her would make like him into time has look two more "
         "write go see number no way could people my than first water been call who oil its now find "
         "long down day did get come made may part").split()
MAX_PROMPT_FILE_BYTES = 64 * 1024 * 1024
MAX_PROMPTS = 100_000
MAX_TURNS = 1_024          # messages in one conversation: real multi-turn sets have at most a few hundred


@dataclass(frozen=True)
class Dist:
    lo: int
    hi: int

    def draw(self, rng: random.Random) -> int:
        return self.lo if self.lo == self.hi else rng.randint(self.lo, self.hi)

    @property
    def mean(self) -> float:
        return (self.lo + self.hi) / 2

    def __str__(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def parse_dist(text: str, what: str, cap: int) -> tuple[Dist, bool]:
    """``'128'`` or ``'64-256'`` -> Dist, and whether it was capped to ``cap``."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(text))
    if not m:
        raise UserError(f"cannot read {what} {text!r}", "write a number like 128 or a range like 64-256")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if lo < 1 or hi < lo:
        raise UserError(f"{what} must be >= 1 and LO <= HI, got {text!r}")
    capped = hi > cap
    return Dist(min(lo, cap), min(hi, cap)), capped


def make_prompt(index: int, n_tokens: int, rng: random.Random) -> str:
    head = f"Request {index}:"
    words = [rng.choice(WORDS) for _ in range(max(n_tokens - 3, 1))]
    return head + " " + " ".join(words)


def cut_to_tokens(text: str, n: int, count: Callable[[str], int]) -> str | None:
    """The longest prefix of ``text`` (cut between characters, so never inside a multi-byte UTF-8
    sequence) that ``count`` says is exactly ``n`` tokens; None if no prefix is exactly n (a token
    boundary that cannot be hit, or ``text`` too short). Binary search on the character length
    (token count grows with the prefix), then a short walk for the exact count."""
    if count(text) < n:
        return None
    lo, hi = 0, len(text)  # smallest prefix length with count >= n lies in (lo, hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count(text[:mid]) >= n:
            hi = mid
        else:
            lo = mid
    best = None
    for k in range(hi, min(len(text), hi + 64) + 1):  # extend while still exactly n (the longest such prefix)
        c = count(text[:k])
        if c == n:
            best = text[:k]
        elif c > n:
            break
    return best


@dataclass
class PromptSource:
    """Where prompt text comes from. The default is synthetic words (``make_prompt``)."""

    texts: list[str] = field(default_factory=list)  # from a file: used in order, cyclically
    conversations: list[dict] = field(default_factory=list)  # {"system": [...], "user_turns": [...], "messages": [...]}
    shared_prefix: str = ""
    shared_prefix_tokens: int | None = None
    chat: bool = False  # the API takes messages (the shared prefix goes in a system message)
    count: Callable[[str], int] | None = None  # exact token counter (BOS included) for exact-length prompts
    exact_misses: int = 0  # prompts whose exact length could not be hit (kept one token short or long)

    @property
    def synthetic(self) -> bool:
        return not self.texts and not self.conversations

    def prompt(self, index: int, n_tokens: int, rng: random.Random) -> tuple[str, list | None]:
        """(prompt text, chat messages or None) for request ``index`` with target length ``n_tokens``."""
        if self.texts:
            body = self.texts[index % len(self.texts)]
        else:
            body = self._synthetic(index, n_tokens, rng)
        if not self.shared_prefix:
            return body, None
        if self.chat:
            return body, [{"role": "system", "content": self.shared_prefix}, {"role": "user", "content": body}]
        return self.shared_prefix + "\n\n" + body, None

    def _synthetic(self, index: int, n_tokens: int, rng: random.Random) -> str:
        if self.count is None:
            return make_prompt(index, n_tokens, rng)
        # enough words to overshoot, then cut to exactly n_tokens as the tokenizer counts
        text = make_prompt(index, 2 * n_tokens + 8, rng)
        cut = cut_to_tokens(text, n_tokens, self.count)
        if cut is None:
            # no prefix is exactly n tokens (a cut inside a multi-token piece): the nearest one that is,
            # one token short before one long, never the uncut words (far longer than n in tokens)
            self.exact_misses += 1
            for d in (-1, 1, -2, 2):
                cut = cut_to_tokens(text, n_tokens + d, self.count) if n_tokens + d > 0 else None
                if cut is not None:
                    return cut
            return make_prompt(index, n_tokens, rng)
        return cut

    def flat_turns(self) -> list[tuple[int, int, list]]:
        """Every user turn of every conversation with the transcript's own history before it."""
        out = []
        for i, c in enumerate(self.conversations):
            msgs = c["messages"]
            turn = 0
            for j, m in enumerate(msgs):
                if m["role"] == "user":
                    out.append((i, turn, msgs[:j + 1]))
                    turn += 1
        return out


def shared_prefix_text(n_tokens: int, count: Callable[[str], int] | None) -> str:
    """One long system prompt of about (exactly, with a tokenizer) ``n_tokens`` tokens, the same for all."""
    rng = random.Random(12345)
    text = "You are a helpful assistant. " + " ".join(rng.choice(WORDS) for _ in range(2 * n_tokens + 8))
    if count is not None:
        cut = cut_to_tokens(text, n_tokens, count)
        if cut is not None:
            return cut
    return " ".join(text.split()[:max(n_tokens, 1)])


def read_prompt_file(path: str, column: str = "prompt") -> tuple[list[str], list[dict]]:
    """(plain prompts, conversations) from a JSONL or CSV file; every problem is one UserError."""
    p = Path(path)
    try:
        if not p.is_file():
            raise UserError(f"no such prompt file: {path}", "give a .jsonl or .csv file")
        size = p.stat().st_size
        if size > MAX_PROMPT_FILE_BYTES:
            raise UserError(f"{path} is {size:,} bytes; prompt files are capped at {MAX_PROMPT_FILE_BYTES:,}")
        raw = p.read_bytes().decode("utf-8", "replace")
    except OSError as e:
        raise UserError(f"cannot read prompt file {path}: {e.strerror or e}") from None
    if p.suffix.lower() == ".csv":
        return _read_csv(raw, path, column), []
    texts, convs = [], []
    for n, line in enumerate(io.StringIO(raw), 1):   # lazily: 16 MiB of blank lines are never 16 M strings
        if not line.strip():
            continue
        obj = json_line(line, f"{path}:{n}")  # nesting capped: 100,000 '[' is one line, not a RecursionError
        if isinstance(obj, str):
            texts.append(obj)
            continue
        if not isinstance(obj, dict):
            raise UserError(f"{path}:{n}: not a JSON object", "one JSON object per line (JSONL)")
        msgs = next((obj[k] for k in ("messages", "conversation", "turns", "conversations") if k in obj), None)
        if msgs is not None:
            convs.append(_conversation(msgs, f"{path}:{n}"))
        else:
            t = obj.get(column, obj.get("prompt", obj.get("text")))
            if not isinstance(t, str) or not t:
                raise UserError(f"{path}:{n}: no '{column}' text and no 'messages'",
                                "each line needs a prompt string or a chat transcript")
            texts.append(t)
        if len(texts) + len(convs) > MAX_PROMPTS:
            raise UserError(f"{path} has more than {MAX_PROMPTS:,} prompts", "use a smaller file")
    if not texts and not convs:
        raise UserError(f"{path} holds no prompts")
    if texts and convs:
        raise UserError(f"{path} mixes plain prompts and chat transcripts", "use one kind per file")
    return texts, convs


def _read_csv(raw: str, path: str, column: str) -> list[str]:
    names, rows = csv_dict_rows(raw, path)  # a field over guard.limits.MAX_FIELD_BYTES is one line
    if column not in names:
        raise UserError(f"{path}: no '{column}' column (columns: {', '.join(names)[:200]})",
                        "name the column with `column`", field="column")
    texts = [r[column] for r in rows if isinstance(r.get(column), str) and r.get(column)]
    if not texts:
        raise UserError(f"{path} holds no prompts in column '{column}'")
    return texts[:MAX_PROMPTS]


def _conversation(msgs, where: str) -> dict:
    if not isinstance(msgs, list) or not msgs:
        raise UserError(f"{where}: messages must be a non-empty list of {{role, content}}")
    if len(msgs) > MAX_TURNS:
        raise UserError(f"{where}: {len(msgs):,} messages, more than the {MAX_TURNS:,} a conversation may have")
    out = []
    for m in msgs:
        if not isinstance(m, dict):
            raise UserError(f"{where}: each message must be an object with role and content")
        role = m.get("role", m.get("from"))
        content = m.get("content", m.get("value"))
        role = {"human": "user", "gpt": "assistant"}.get(role, role) if isinstance(role, str) else None
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise UserError(f"{where}: a message needs role system/user/assistant and text content")
        out.append({"role": role, "content": content})
    user_turns = [m["content"] for m in out if m["role"] == "user"]
    if not user_turns:
        raise UserError(f"{where}: a conversation without a user turn")
    system = [m for m in out[:1] if m["role"] == "system"]
    return {"system": system, "user_turns": user_turns, "messages": out}
