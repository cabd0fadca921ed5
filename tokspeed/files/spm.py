"""SentencePiece-style BPE by score, as llama.cpp's ``llm_tokenizer_spm`` runs it on a GGUF vocab.

For ``tokenizer.ggml.model == "llama"`` GGUF files carry tokens and their scores, not merges. The
algorithm (llama.cpp src/llama-vocab.cpp): replace spaces by U+2581 (and prefix one unless
``add_space_prefix`` is false), split into UTF-8 characters, then repeatedly merge the adjacent
pair whose concatenation is a vocabulary token with the highest score (leftmost on ties); symbols
left that are not tokens fall back to their bytes ``<0xXX>`` (or ``unk``).

Limits: no text normalisation beyond the space rule (SentencePiece's NFKC ``precompiled_charsmap``
is not applied), control/user-defined tokens written inside the text are not recognised as one
token. For ordinary text this gives llama.cpp's count.
"""

from __future__ import annotations

import heapq

SPACE = "\u2581"


class SpmTokenizer:
    def __init__(self, tokens: list[str], scores: list[float], unk_id: int = 0, bos_id: int | None = None,
                 add_bos: bool = True, add_space_prefix: bool = True):
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.scores = scores
        self.unk_id, self.bos_id, self.add_bos, self.add_space_prefix = unk_id, bos_id, add_bos, add_space_prefix
        self.byte_ids = [self.ids.get(f"<0x{b:02X}>") for b in range(256)]

    def _score(self, text: str):
        i = self.ids.get(text)
        return None if i is None else (self.scores[i] if i < len(self.scores) else 0.0)

    def encode(self, text: str) -> list[int]:
        out = [self.bos_id] if self.add_bos and self.bos_id is not None else []
        if not text:
            return out
        text = (" " + text if self.add_space_prefix else text).replace(" ", SPACE)
        sym = list(text)
        n = len(sym)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        heap: list = []

        def push(left: int, right: int):
            if left < 0 or right >= n:
                return
            s = self._score(sym[left] + sym[right])
            if s is not None:
                heapq.heappush(heap, (-s, left, right, len(sym[left]), len(sym[right])))

        for i in range(n - 1):
            push(i, i + 1)
        while heap:
            _, left, right, ll, rl = heapq.heappop(heap)
            if nxt[left] != right or len(sym[left]) != ll or len(sym[right]) != rl or not sym[right]:
                continue                                     # stale: one side merged since
            sym[left] += sym[right]
            sym[right] = ""
            nxt[left] = nxt[right]
            if nxt[right] < n:
                prv[nxt[right]] = left
            push(prv[left], left)
            push(left, nxt[left])
        i = 0
        while i < n:
            piece = sym[i]
            tid = self.ids.get(piece)
            if tid is not None:
                out.append(tid)
            else:
                for b in piece.encode("utf-8"):
                    bid = self.byte_ids[b]
                    out.append(bid if bid is not None else self.unk_id)
            i = nxt[i]
        return out
