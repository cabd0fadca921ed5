"""How many keys a pass's queries attend (causal, capped at a sliding window, or within chunks), where that stops
being linear in depth, and how many routed experts a pass touches: the counting the operator ledger
(``tokspeed/ledger.py``) builds its attention core and expert traffic on."""

from __future__ import annotations


def expected_experts(n_experts: int, k: int, tokens: int) -> float:
    """Expected distinct experts touched when ``tokens`` tokens each pick k of E uniformly."""
    if n_experts == 0:
        return 0.0
    return n_experts * (1.0 - (1.0 - k / n_experts) ** tokens)


def _attended(depth: int, n: int, window: int) -> float:
    """Sum over the n new queries of the number of keys each attends (causal, optional window)."""
    total = n * depth + n * (n + 1) / 2
    if not window or depth + n <= window:
        return total
    # queries i = 0..n-1 attend min(window, depth + i + 1)
    first_capped = max(0, window - depth - 1)           # queries before this attend depth+i+1 < window
    first_capped = min(first_capped, n)
    uncapped = first_capped * depth + first_capped * (first_capped + 1) / 2
    return uncapped + (n - first_capped) * window


def _attended_chunked(depth: float, n: int, chunk: int) -> float:
    """Keys attended by queries at positions depth..depth+n-1 when each attends only its own chunk of
    ``chunk`` positions (Llama 4): the query at position p attends (p mod chunk) + 1 keys."""
    def prefix(m: float) -> float:      # sum over p < m of (p mod chunk) + 1
        full, rest = divmod(m, chunk)
        return full * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2
    return float(prefix(depth + n) - prefix(depth))


def depth_kinks(spec) -> tuple[int, ...]:
    """Decode depths where the attention core stops being linear in depth: a sliding window's edge."""
    if spec.n_sliding_layers and spec.sliding_window and spec.chunked_attention:
        # chunked attention restarts at every chunk boundary (Llama 4): up to 16M tokens of depth
        return tuple(range(spec.sliding_window, (1 << 24) + 1, spec.sliding_window))
    if spec.index_topk:         # sparse-indexed attention reads min(depth + 1, topk) latents
        return (spec.index_topk,)
    return (spec.sliding_window,) if spec.n_sliding_layers and spec.sliding_window else ()
