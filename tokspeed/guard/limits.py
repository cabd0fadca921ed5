"""Plausible ranges for what a file or a request describes, and caps on the documents that describe it.

Model shapes: a model file, a config.json upload or a catalog entry may claim any number; tokspeed's work
grows with layers, experts and vocabulary, so a claim beyond every real model is refused with the field
named, before any work. The limits are policy, set an order of magnitude above the largest released models
(docs/security.md): layers 126 (Llama 3.1 405B), width 18,432 (PaLM 540B), heads 128, experts 384
(Kimi K2), vocabulary 262,144 (Gemma 3), FFN width 73,728 (PaLM).

Documents read from files someone sent (prompt files, run files): nesting beyond ``MAX_JSON_DEPTH`` and a
CSV field beyond ``MAX_FIELD_BYTES`` are one line each, never a RecursionError or a csv.Error traceback.
"""

from __future__ import annotations

import csv
import io

from ..errors import UserError
from .typed import OutOfRange, parse

MODEL_LIMITS = {                  # field -> the largest value accepted
    "n_layers": 2_048, "d_model": 262_144, "n_heads": 4_096, "n_kv_heads": 4_096, "vocab_size": 4_194_304,
    "d_ff": 2_097_152, "head_dim": 16_384, "n_experts": 16_384, "n_active_experts": 16_384,
    "n_shared_experts": 1_024, "d_ff_expert": 2_097_152, "d_ff_shared": 2_097_152, "n_dense_layers": 2_048,
    "n_sliding_layers": 2_048, "n_linear_layers": 2_048,
}
DEFAULT_FIELD_LIMIT = 10**8       # other shape fields (ranks, window sizes, state sizes)
MAX_JSON_DEPTH = 64               # a prompt or run file line: real ones nest 3-5 levels
MAX_FIELD_BYTES = 4 * 2**20       # one CSV field: a 131,072-token prompt is ~0.5 MB of text
MAX_RUN_FILE_BYTES = 2 * 2**30    # a requests.jsonl read back whole (--summarize, --compare): 100,000 requests with
                                  # ~500 gaps each are ~1.2 GB; held in memory as ~1.5x its size
# Memory budgets in objects, not bytes: what a parser holds grows with the entries it makes, and a few bytes of
# file (or none: a sparse file) can claim millions of them. Each parser counts and stops at its budget.
MAX_TENSORS = 2**18               # tensors in one model file: an unmerged 256-expert MoE (DeepSeek-V3) has ~47,000
MAX_ARRAY_ENTRIES = 2**22         # one GGUF metadata array: the vocabulary limit above (per-layer arrays have <= 2,048)
MAX_ARRAY_ENTRIES_TOTAL = 2**24   # all GGUF metadata arrays together: vocabulary, scores, types and merges, 4x over
MAX_ROWS = 2**18                  # rows of a prompt file or lines of a trace: 262,144 requests, above any benchmark
MIN_RATE_RPS = 0.01               # one request per 100 s: slower arrivals are no load (bench-server) and a
                                  # simulated run of 1e-300 requests/s would never reach its second arrival


def shape_limit(field: str) -> int:
    return MODEL_LIMITS.get(field, DEFAULT_FIELD_LIMIT)


def check_shape(field: str, value: int, where: str) -> None:
    """UserError naming ``field`` when ``value`` is beyond every real model."""
    limit = shape_limit(field)
    if value > limit:
        raise UserError(f"{where}: {field} {value:,} is beyond any real model (at most {limit:,})",
                        "is the file damaged or made up?")


def json_line(text: str, where: str):
    """One JSON value from one line of a file, through the one gate (``guard.typed``): nesting capped,
    numbers bounded, every failure one UserError."""
    try:
        return parse(text, MAX_JSON_DEPTH)
    except OutOfRange as e:
        raise UserError(f"{where}: {e}") from None
    except ValueError as e:
        reason = str(e).removeprefix("not valid JSON ")
        raise UserError(f"{where}: " + (reason if "nested" in reason else f"not a JSON object {reason}"),
                        "one JSON object per line (JSONL)") from None


def over_budget(n: int, budget: int, what: str, where: str) -> None:
    """UserError when ``n`` entries pass ``budget`` (a parser counts what it makes and stops there)."""
    if n > budget:
        raise UserError(f"{where}: more than {budget:,} {what}, beyond any real file",
                        "is the file damaged or made up?")


def csv_dict_rows(raw: str, where: str) -> tuple[list[str], list[dict]]:
    """(field names, rows) of a CSV text; a field longer than MAX_FIELD_BYTES, more than MAX_ROWS rows or a
    broken row is one line. Rows with no value at all are skipped, never held."""
    limit = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD_BYTES)
    try:
        reader = csv.DictReader(io.StringIO(raw))
        rows = []
        for row in reader:
            if not any(v for k, v in row.items() if k is not None):
                continue
            rows.append(row)
            over_budget(len(rows), MAX_ROWS, "rows", where)
        return list(reader.fieldnames or []), rows
    except csv.Error as e:
        raise UserError(f"{where}: not a readable CSV ({str(e)[:80]}; a field may hold at most "
                        f"{MAX_FIELD_BYTES // 2**20} MiB)") from None
    finally:
        csv.field_size_limit(limit)


def expected_tensor_shapes(spec) -> dict:
    """role -> (rows, cols) every standard decoder tensor of ``spec`` must have (GGUF roles, HF layout)."""
    d, L = spec.d_model, spec.n_layers
    want = {"token_embd": (spec.vocab_size, d), "output": (spec.vocab_size, d)}
    for i in range(L):
        b = f"blk.{i}."
        want.update({b + "attn_q": (spec.q_proj_rows, d), b + "attn_k": (spec.kv_dim, d),
                     b + "attn_v": (spec.kv_dim, d), b + "attn_output": (d, spec.attn_out_dim)})
        if not spec.is_moe and spec.d_ff:
            want.update({b + "ffn_gate": (spec.d_ff, d), b + "ffn_up": (spec.d_ff, d), b + "ffn_down": (d, spec.d_ff)})
    return want


def check_tensor_shapes(spec, shapes: dict, where: str) -> None:
    """A file whose tensors disagree with its own metadata is refused with the tensor named, before any
    weight is read (a torch RuntimeError deep in a matmul otherwise). ``shapes``: role -> (shape, ...)."""
    if spec.is_mla or getattr(spec, "n_linear_layers", 0):
        return                                  # their projections are laid out otherwise; not checked here
    for role, want in expected_tensor_shapes(spec).items():
        got = shapes.get(role)
        if got is None:
            continue
        shape = tuple(got[0])
        if len(shape) == 2 and shape != want:
            raise UserError(f"{where}: tensor {role} is {shape[0]}x{shape[1]} but the metadata implies "
                            f"{want[0]}x{want[1]}", "the file is damaged or its metadata is wrong")
