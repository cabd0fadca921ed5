"""The torch backend of `tokspeed measure`: the reference decoder on random, safetensors or GGUF
weights; prefill and decode timed at each KV depth (llama-bench ``-d``), sampling on the CPU."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..guard.limits import check_tensor_shapes
from ..quant.format_table import torch_default, torch_dtypes
from ..resolve import resolve_model
from ..userfile import path_kind, require_file
from .memory_guard import check_fits, torch_run_bytes
from .stats import Timing
from .weights import gguf_tensor_shapes, gguf_weights, hf_overrides, random_weights, safetensors_weights, spec_from_gguf

FILL_CHUNK = 512   # depth tokens are prefilled in chunks of this many (llama.cpp's default n_batch)


@dataclass
class LoadedModel:
    spec: object
    decoder: object
    source: str                 # random | safetensors | gguf
    path: str = ""
    tokenizer: object = None
    device: str = "cpu"
    quant: str = field(default_factory=lambda: torch_default("cpu"))
    notes: list = field(default_factory=list)


DEVICE = re.compile(r"^(cpu|cuda(:\d+)?)$")


def engine_version(torch) -> dict:
    """What ran the measurement: the torch release (and the CUDA it was built for, if any)."""
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    return {"engine_version": f"torch {torch.__version__}", "engine_build": f"CUDA {cuda}" if cuda else "CPU build"}


def check_device(device: str, torch=None) -> None:
    """--device is cpu or cuda[:N] (the reference decoder runs nowhere else); with torch at hand, a
    CUDA device must exist. Checked before any work, so torch's RuntimeError never reaches the user."""
    if not DEVICE.match(str(device)):
        raise UserError(f"device={str(device)[:40]!r}: the torch backend runs on cpu or cuda[:N]",
                        "use device='cpu' or device='cuda'", field="device")
    if torch is None or device == "cpu":
        return
    if not torch.cuda.is_available():
        raise UserError(f"device={device!r}: torch sees no CUDA device", "use device='cpu'", field="device")
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise UserError(f"device={device!r}: torch sees {torch.cuda.device_count()} CUDA device(s)",
                        f"use device='cuda:0' … device='cuda:{torch.cuda.device_count() - 1}'", field="device")

def check_quant(quant: str) -> str:
    """The torch dtype name of ``quant`` (the format table's ``torch_dtype``), checked without importing torch."""
    q, dtypes = quant.upper(), torch_dtypes()
    if q not in dtypes:
        raise UserError(f"the torch backend runs {', '.join(dtypes)} weights, not {quant!r}",
                        "use backend='llama.cpp' for quantized GGUF kernels", field="quant")
    return dtypes[q]


def torch_dtype(quant: str):
    import torch  # lazy: optional dependency (torch, the measure extra)

    return getattr(torch, check_quant(quant))


def load_model(model_arg: str, device: str, quant: str, max_seq: int, max_batch: int, prompt: int,
               seed: int = 0) -> LoadedModel:
    """Build the reference decoder for MODEL: a catalog id or config (random weights), a
    safetensors folder, or a .gguf file; refuse before allocating if it does not fit."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    from .decoder import Decoder, DecoderConfig  # lazy: optional dependency (torch, through measure.decoder; the measure extra)


    check_device(device, torch)
    dtype = torch_dtype(quant)
    elt = torch.tensor([], dtype=dtype).element_size()

    p = Path(model_arg).expanduser()
    tokenizer = None
    if p.suffix == ".gguf":
        require_file(p, "GGUF file")
        meta, shapes = gguf_tensor_shapes(p)
        spec, over = spec_from_gguf(meta, shapes, p.stem)

        check_tensor_shapes(spec, shapes, p.name)      # tensors that disagree with the metadata: one line
        check_fits(torch_run_bytes(spec, elt, max_seq, max_batch, prompt, from_file=True), device, f"{p.name} in {quant}")
        weights, _ = gguf_weights(p)
        source = "gguf"
    elif path_kind(p, "model") == "dir" and list(p.glob("*.safetensors")):
        spec, _ = resolve_model(str(p))
        check_fits(torch_run_bytes(spec, elt, max_seq, max_batch, prompt, from_file=True), device, f"{p.name} in {quant}")
        weights, config = safetensors_weights(p)
        over = hf_overrides(config, weights)
        if path_kind(p / "tokenizer.json", "tokenizer.json") == "file":
            from tokenizers import Tokenizer  # lazy: optional dependency (tokenizers, the files extra)

            tokenizer = Tokenizer.from_file(str(p / "tokenizer.json"))
        source = "safetensors"
    else:
        spec, _ = resolve_model(model_arg)
        cfg0 = DecoderConfig.from_spec(spec)
        check_fits(torch_run_bytes(spec, elt, max_seq, max_batch, prompt), device, f"{spec.id} in {quant}")
        weights, over, source = random_weights(cfg0, dtype, device, seed), {}, "random"
    cfg = DecoderConfig.from_spec(spec, **over)
    decoder = Decoder(cfg, weights, max_seq=max_seq, max_batch=max_batch, dtype=dtype, device=device)
    return LoadedModel(spec, decoder, source, str(p) if source != "random" else "", tokenizer, device, quant.upper())


def sample_cpu(logits, temperature: float = 0.0, generator=None):
    """The next token of each row, chosen on the CPU as engines do: logits copied to host,
    greedy (temperature 0) or sampled from softmax(logits / temperature)."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    host = logits.float().cpu()
    if temperature <= 0:
        return host.argmax(-1)
    return torch.multinomial((host / temperature).softmax(-1), 1, generator=generator)[:, 0]


def _sync(device):
    import torch  # lazy: optional dependency (torch, the measure extra)

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def measure_point(lm: LoadedModel, batch: int, context: int, prompt: int, gen: int, warmup: int = 2,
                  seed: int = 0, on_step=None) -> dict:
    """One (batch, depth) point: fill the KV cache with ``context`` tokens (untimed), time a
    prefill of ``prompt`` tokens at that depth, then ``gen`` decode steps from the depth (after
    ``warmup`` untimed steps), then one instrumented step for the per-stage split."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    from .decoder import StageTimer  # lazy: optional dependency (torch, through measure.decoder; the measure extra)


    m, dev = lm.decoder, lm.device
    g = torch.Generator().manual_seed(seed)
    toks = torch.randint(0, m.cfg.vocab_size, (batch, context + max(prompt, 1)), generator=g).to(dev)
    for s in range(0, context, FILL_CHUNK):
        m(toks[:, s:min(context, s + FILL_CHUNK)], s)
    prefill_s = 0.0
    if prompt:
        _sync(dev)
        t0 = time.perf_counter()
        m(toks[:, context:context + prompt], context)
        _sync(dev)
        prefill_s = time.perf_counter() - t0
    nxt = toks[:, context:context + 1]
    for _ in range(warmup):
        m(nxt, context)
    steps = []
    for i in range(gen):
        _sync(dev)
        t0 = time.perf_counter()
        nxt = sample_cpu(m(nxt, context + i))[:, None].to(dev)
        steps.append(time.perf_counter() - t0)
        if on_step:
            on_step()
    timer = StageTimer(dev)
    logits = m(nxt, context, timer)
    t0 = time.perf_counter()
    sample_cpu(logits)
    timer.seconds["sampling"] = time.perf_counter() - t0
    kv_avg = sum(m.kv_bytes_per_token(context + i, batch) for i in range(gen)) / gen
    flops = sum(m.flops_per_token(context + i) for i in range(gen)) / gen * batch
    step_s = sum(steps) / gen
    w = m.weight_bytes_per_token()
    return {
        "batch": batch, "context": context, "prompt": prompt, "gen": gen,
        "prefill_tok_s": batch * prompt / prefill_s if prompt else None, "prefill_s": prefill_s if prompt else None,
        "decode_tok_s": batch / step_s, "decode_ms_per_token": step_s * 1e3,
        "decode_tok_s_median": batch / sorted(steps)[len(steps) // 2],
        "decode_step": Timing.from_samples(steps, warmup).to_dict(),
        "weight_bytes_per_token": w, "kv_bytes_per_token": kv_avg / batch,
        "bytes_per_step": w + kv_avg, "bytes_per_token": (w + kv_avg) / batch, "flops_per_step": flops,
        "stages_ms": {k: v * 1e3 for k, v in timer.seconds.items()},
    }


def counted_text(lm: LoadedModel) -> str:
    return ("bytes per decode step = every weight matrix the step multiplies (active experts only; "
            "the LM head; norms) + one embedding row + the KV cache read at each step's depth "
            "(K and V, all layers, cached tokens + the new one), averaged over the generated tokens; "
            f"weights in {lm.quant}, KV cache in {lm.quant}; activations and logits not counted")


def generate_text(lm: LoadedModel, text: str, gen: int, emit, top: int = 5, temperature: float = 0.0):
    """Tokenize ``text``, prefill it, then decode ``gen`` tokens, calling ``emit(event)`` with
    {"kind": "candidates", ...} for the first step's top-``top`` next-token probabilities and
    {"kind": "token", "text", "ms"} for each new token as it appears."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    if lm.tokenizer is None:
        raise UserError("`text` needs real weights with a tokenizer", "give a safetensors folder with tokenizer.json, "
                        "or a GGUF file with backend='llama.cpp'", field="text")
    m, dev = lm.decoder, lm.device
    ids = lm.tokenizer.encode(text).ids
    if len(ids) + gen > m.max_seq:
        raise UserError(f"{len(ids)} prompt tokens + {gen} generated exceed the KV cache ({m.max_seq})")
    emit({"kind": "prompt", "tokens": len(ids), "pieces": [lm.tokenizer.decode([i]) for i in ids]})
    t0 = time.perf_counter()
    logits = m(torch.tensor([ids], device=dev), 0)
    probs = logits.float().cpu().softmax(-1)[0]
    p, idx = probs.topk(top)
    emit({"kind": "candidates", "ms": (time.perf_counter() - t0) * 1e3,
          "top": [(lm.tokenizer.decode([int(i)]), float(v), int(i)) for v, i in zip(p, idx)]})
    pos, out = len(ids), []
    nxt = sample_cpu(logits, temperature)          # the first new token comes from the prefill
    step_ms = (time.perf_counter() - t0) * 1e3
    for i in range(gen):
        tok = int(nxt[0])
        out.append(tok)
        emit({"kind": "token", "id": tok, "text": lm.tokenizer.decode([tok]), "ms": step_ms})
        if i == gen - 1:
            break
        t0 = time.perf_counter()
        nxt = sample_cpu(m(nxt[:, None].to(dev), pos), temperature)
        step_ms = (time.perf_counter() - t0) * 1e3
        pos += 1
    return lm.tokenizer.decode(out)
