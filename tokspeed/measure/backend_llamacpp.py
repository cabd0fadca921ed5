"""The llama.cpp backend of `tokspeed measure` (llama-cpp-python): real GGUF files with their real
quant kernels and tokenizer, timed at each KV depth like llama-bench ``-d`` (batch 1)."""

from __future__ import annotations

import codecs
import ctypes
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..stats import median
from ..userfile import require_file
from .detect import detect
from .memory_guard import check_fits
from .stats import Timing
from .weights import gguf_tensor_shapes, spec_from_gguf

# llama.cpp's default KV cache type is F16 (2 bytes per value) unless --cache-type-k/v says otherwise.
KV_BYTES_PER_VALUE = 2


@dataclass
class LlamaModel:
    llm: object
    spec: object
    path: str
    shapes: dict         # role -> (shape, bytes in the file)
    threads: int

    @property
    def n_vocab(self) -> int:
        return self.llm.n_vocab()

    @property
    def flash_attention(self) -> bool:
        """Whether the context runs FlashAttention: llama-cpp-python leaves it off unless asked (0.3.x:
        ``flash_attn_type`` DISABLED; older: ``flash_attn`` False), unlike llama.cpp's own ``-fa auto``."""
        params = getattr(self.llm, "context_params", None)
        kind = getattr(params, "flash_attn_type", None)
        if kind is not None:
            return int(kind) != 0          # LLAMA_FLASH_ATTN_TYPE_DISABLED = 0; AUTO = -1, ENABLED = 1
        return bool(getattr(params, "flash_attn", False))

    def weight_bytes_per_token(self) -> float:
        """Every tensor's bytes as stored (its real quant blocks) except the embedding table, of
        which one row is read; routed experts scaled to the ones a token visits."""
        s, total = self.spec, 0.0
        for role, (shape, nbytes) in self.shapes.items():
            if role == "token_embd":
                total += nbytes / shape[0]
            elif role.endswith("_exps") and s.n_experts:
                total += nbytes * s.n_active_experts / s.n_experts
            else:
                total += nbytes
        if "output" not in self.shapes:   # tied: the LM head reads the whole embedding table
            total += self.shapes["token_embd"][1]
        return total

    def kv_bytes_per_token(self, context: int) -> float:
        return 2 * self.spec.n_layers * self.spec.kv_dim * (context + 1) * KV_BYTES_PER_VALUE

    def flops_per_token(self, context: int) -> float:
        s = self.spec
        mats = 0
        for role, (shape, _) in self.shapes.items():
            if len(shape) >= 2 and role != "token_embd":
                n = 1
                for d in shape:
                    n *= d
                mats += n * (s.n_active_experts / s.n_experts if role.endswith("_exps") and s.n_experts else 1)
        if "output" not in self.shapes:
            mats += s.vocab_size * s.d_model
        return 2 * mats + 4 * s.n_layers * s.n_heads * s.head_dim * (context + 1)


def load_llama(path: str, n_ctx: int, threads: int | None = None, flash_attention: bool = False) -> LlamaModel:
    """The GGUF at ``path`` in a llama.cpp context of ``n_ctx`` tokens on ``threads`` threads, with FlashAttention
    on or off (llama-cpp-python's ``flash_attn``: off unless asked, where llama.cpp's own tools run ``-fa auto``)."""
    p = Path(path).expanduser()
    if p.suffix != ".gguf":         # the user's input first, then the optional dependency
        raise UserError(f"backend='llama.cpp' needs a .gguf file, got {path!r}", field="backend")
    try:
        import llama_cpp  # lazy: optional dependency (llama_cpp, the llamacpp extra)
    except ImportError:
        raise UserError("backend='llama.cpp' needs llama-cpp-python", "pip install 'tokspeed[llamacpp]'",
                        field="backend") from None


    require_file(p, "GGUF file")
    meta, shapes = gguf_tensor_shapes(p)
    spec, _ = spec_from_gguf(meta, shapes, p.stem)
    kv = 2 * spec.n_layers * spec.kv_dim * n_ctx * KV_BYTES_PER_VALUE
    check_fits(sum(b for _, b in shapes.values()) + kv, "cpu", f"{p.name} with a {n_ctx}-token context")
    threads = threads or detect().physical_cores
    llm = _open(llama_cpp, p, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, n_batch=512,
                logits_all=False, verbose=False, **({"flash_attn": True} if flash_attention else {}))
    return LlamaModel(llm, spec, str(p), shapes, threads)


def _open(llama_cpp, p: Path, **kw):
    """``llama_cpp.Llama(p)`` with llama.cpp's own log captured: on a file it cannot load, llama-cpp-python
    says only "Failed to load model from file" (its log went to /dev/null with verbose=False); the
    user gets llama.cpp's reason instead ("error loading model: ... not within the file bounds")."""
    log: list[str] = []
    callback_type = getattr(llama_cpp, "llama_log_callback", None)
    log_set = getattr(llama_cpp, "llama_log_set", None)
    callback = None
    if callback_type is not None and log_set is not None:
        def collect(level, text, user_data):
            log.append(text.decode("utf-8", errors="replace") if text else "")
        callback = callback_type(collect)          # kept referenced until the log callback is restored
        log_set(callback, ctypes.c_void_p(0))
    try:
        return llama_cpp.Llama(str(p), **kw)
    except (ValueError, RuntimeError, OSError) as e:
        raise UserError(f"llama.cpp cannot load {p.name}: {load_failure_reason(log) or e}",
                        "is the file complete, and is its architecture supported by this llama.cpp build?") from None
    finally:
        if callback is not None:
            restore = getattr(getattr(llama_cpp, "_logger", None), "llama_log_callback", None)
            log_set(restore, ctypes.c_void_p(0)) if restore is not None else None


def load_failure_reason(log: list[str]) -> str:
    """The lines of llama.cpp's log that say why a load failed (its error lines), joined on one line."""
    lines = [ln.strip() for ln in "".join(log).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() or "failed" in ln.lower()]
    return "; ".join(dict.fromkeys(errors or lines[-2:]))[:500]


def engine_version(llama_cpp) -> dict:
    """What ran the measurement: llama-cpp-python's version and llama.cpp's build/system info."""
    info = ""
    if hasattr(llama_cpp, "llama_print_system_info"):
        raw = llama_cpp.llama_print_system_info()
        info = (raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)).strip()
    return {"engine_version": f"llama-cpp-python {getattr(llama_cpp, '__version__', 'unknown')}",
            "engine_build": info}


def _last_logits(lm: LlamaModel):
    import numpy as np  # lazy: optional dependency (numpy, the files/measure extra)

    return np.ctypeslib.as_array(lm.llm._ctx.get_logits(), shape=(lm.n_vocab,))


def measure_point(lm: LlamaModel, context: int, prompt: int, gen: int, warmup: int = 2, seed: int = 0,
                  on_step=None) -> dict:
    """Same protocol as the torch backend: fill ``context`` tokens, time a ``prompt``-token
    prefill at that depth, rewind to the depth, time ``gen`` single-token steps (greedy argmax
    on the CPU between steps)."""
    import numpy as np  # lazy: optional dependency (numpy, the files/measure extra)

    llm = lm.llm
    rng = np.random.default_rng(seed)
    toks = [int(t) for t in rng.integers(0, lm.n_vocab, context + max(prompt, 1))]
    llm.reset()
    if context:
        llm.eval(toks[:context])
    prefill_s = 0.0
    if prompt:
        t0 = time.perf_counter()
        llm.eval(toks[context:context + prompt])
        prefill_s = time.perf_counter() - t0
    nxt = toks[context]
    for _ in range(warmup):
        llm.n_tokens = context
        llm.eval([nxt])
    llm.n_tokens = context
    steps = []
    for _ in range(gen):
        t0 = time.perf_counter()
        llm.eval([nxt])
        nxt = int(_last_logits(lm).argmax())
        steps.append(time.perf_counter() - t0)
        if on_step:
            on_step()
    step_s = sum(steps) / gen
    w = lm.weight_bytes_per_token()
    kv = sum(lm.kv_bytes_per_token(context + i) for i in range(gen)) / gen
    return {
        "batch": 1, "context": context, "prompt": prompt, "gen": gen,
        "prefill_tok_s": prompt / prefill_s if prompt else None, "prefill_s": prefill_s if prompt else None,
        "decode_tok_s": 1 / step_s, "decode_ms_per_token": step_s * 1e3,
        "decode_tok_s_median": 1 / median(steps),
        "decode_step": Timing.from_samples(steps, warmup).to_dict(),
        "weight_bytes_per_token": w, "kv_bytes_per_token": kv, "bytes_per_step": w + kv, "bytes_per_token": w + kv,
        "flops_per_step": sum(lm.flops_per_token(context + i) for i in range(gen)) / gen, "stages_ms": {},
    }


COUNTED = ("bytes per decode step = every tensor of the GGUF file at its stored size (its quant blocks), "
           "routed experts scaled to the active ones, one row of the embedding table (the whole table when "
           "the LM head is tied to it) + the F16 KV cache read at each step's depth (K and V, all layers, "
           "cached tokens + the new one), averaged over the generated tokens; activations not counted")


def _piece(b: bytes) -> str:
    """A token's bytes as text, or as <0xNN> bytes when they are part of a character."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"<0x{x:02X}>" for x in b)


def generate_text(lm: LlamaModel, text: str, gen: int, emit, top: int = 5):
    """Tokenize with the GGUF's own tokenizer, prefill, then stream ``gen`` greedy tokens. Token
    bytes go through an incremental UTF-8 decoder: a token holding part of a character (one byte
    of a Hangul syllable) shows as '' until the character completes."""
    import numpy as np  # lazy: optional dependency (numpy, the files/measure extra)

    llm = lm.llm
    kind = (getattr(llm, "metadata", None) or {}).get("tokenizer.ggml.model", "no_vocab")
    if kind in ("no_vocab", "none", ""):      # llama.cpp would abort the process in its tokenizer (GGML_ASSERT)
        raise UserError(f"{Path(lm.path).name} carries no tokenizer (tokenizer.ggml.model = {kind!r}): `text` "
                        "needs one", "use a GGUF converted from a Hugging Face model, or drop `text` to time decode",
                        field="text")
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    ids = llm.tokenize(text.encode("utf-8"), add_bos=True)
    emit({"kind": "prompt", "tokens": len(ids), "pieces": [_piece(llm.detokenize([i])) for i in ids]})
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(ids)
    logits = _last_logits(lm).astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    best = np.argsort(-probs)[:top]
    step_ms = (time.perf_counter() - t0) * 1e3
    emit({"kind": "candidates", "ms": step_ms,
          "top": [(_piece(llm.detokenize([int(i)])), float(probs[i]), int(i)) for i in best]})
    nxt, out = int(best[0]), []
    for i in range(gen):
        out.append(nxt)
        emit({"kind": "token", "id": nxt, "text": utf8.decode(llm.detokenize([nxt])), "ms": step_ms})
        if i == gen - 1 or nxt == llm.token_eos():
            break
        t0 = time.perf_counter()
        llm.eval([nxt])
        nxt = int(_last_logits(lm).argmax())
        step_ms = (time.perf_counter() - t0) * 1e3
    return llm.detokenize(out).decode("utf-8", "replace")
