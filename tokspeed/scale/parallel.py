"""``--parallel``: how ``--gpus N`` devices share a model.

- ``tp``: tensor parallel. Every device holds 1/N of every weight matrix (and of the KV heads) and
  reads it each pass; two all-reduces of the hidden state per layer (Megatron-LM: after attention and
  after the MLP). vLLM / TensorRT-LLM / gpt-fast. llama.cpp's row split (``-sm row``) is the same
  sharding but gathers every matmul's result on the main GPU (one sync per matmul).
- ``pp``: pipeline parallel. Each device holds a contiguous block of layers; a sequence visits the
  devices in turn, and micro-batches keep several devices busy at once (vLLM/Megatron).
- ``split``: llama.cpp's layer split (``-sm layer``, its multi-GPU default since 2024): blocks of
  layers like ``pp``, one batch walks the devices in turn (no decode micro-batching).
- ``tp=4,pp=2``: both; N = tp x pp.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engines.compat import runtime_of
from ..errors import UserError



@dataclass(frozen=True)
class Parallel:
    tp: int = 1
    pp: int = 1
    style: str = "none"

    @property
    def n_devices(self) -> int:
        return self.tp * self.pp

    @property
    def micro_batched(self) -> bool:
        """Decode micro-batches flow through the pipeline (not llama.cpp's layer split)."""
        return self.style in ("pp", "tp+pp")

    def to_dict(self) -> dict:
        return {"style": self.style, "tp": self.tp, "pp": self.pp, "n_devices": self.n_devices}


def default_style(engine_name: str) -> str:
    """llama.cpp splits layers by default; the serving engines shard tensors."""
    return "split" if runtime_of(engine_name) == "llama.cpp" else "tp"


# llama.cpp's row split (``-sm row``) prefill is not modelled: the 2023 builds measured 3-35x below one GPU
# (6x RTX 3090, llama-2-7b F16: 88 tok/s against 3,169 on one card, data/validation/calibration.csv), of which
# moving each matmul's activations over PCIe explains about 0.13 s of the 5.6 s (docs/scale.md).
ROW_SPLIT_PREFILL = ("llama.cpp row split (parallel='tp') prefill is not modelled: 2023 builds measured 3-35x "
                     "below one GPU, the link time explains a few % of it (docs/scale.md); use parallel='split'")


def row_split_prefill(engine_name: str, style: str, n_devices: int, metric: str) -> bool:
    """True for a llama.cpp prefill over several devices in row split (``tp``): the case ``ROW_SPLIT_PREFILL``
    says is not modelled."""
    return (metric == "prefill" and n_devices > 1 and style == "tp"
            and runtime_of(engine_name) == "llama.cpp")


def parse_parallel(text: str | None, gpus: int, engine_name: str = "llama.cpp") -> Parallel:
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise UserError(f"gpus must be a whole number >= 1, got {gpus!r}", field="gpus")
    t = (text or "").strip().lower().replace(" ", "")
    if not t:
        if gpus == 1:
            return Parallel()
        t = default_style(engine_name)
    if t == "none":
        if gpus != 1:
            raise UserError(f"parallel='none' with gpus={gpus}", "use tp, pp, split or tp=A,pp=B", field="parallel")
        return Parallel()
    if t == "tp":
        return Parallel(tp=gpus, style="tp" if gpus > 1 else "none")
    if t in ("pp", "split", "layer", "layer-split"):
        style = "split" if t != "pp" else "pp"
        return Parallel(pp=gpus, style=style if gpus > 1 else "none")
    degrees = read_degrees(text, ("tp", "pp"), "write tp, pp, split, or tp=4,pp=2")
    tp, pp = degrees.get("tp", 1), degrees.get("pp", 1)
    if gpus != 1 and tp * pp != gpus:
        raise UserError(f"parallel={text!r} uses {tp * pp} GPUs but gpus={gpus}", f"use gpus={tp * pp}", field="parallel")
    style = "tp+pp" if tp > 1 and pp > 1 else "tp" if tp > 1 else "pp" if pp > 1 else "none"
    return Parallel(tp=tp, pp=pp, style=style)


def read_degrees(text: str, keys: tuple[str, ...], hint: str) -> dict[str, int]:
    """``tp=4,pp=2``-style degrees as {key: int >= 1}, each of ``keys`` at most once (``tokspeed serve`` reads
    ``tp,pp,ep,dp`` with it)."""
    out: dict[str, int] = {}
    for part in (text or "").strip().lower().replace(" ", "").split(","):
        key, _, val = part.partition("=")
        if key not in keys or key in out or not val.isdigit() or int(val) < 1:
            raise UserError(f"cannot read parallel={text!r}", hint, field="parallel")
        out[key] = int(val)
    return out


def check_tp(spec, tp: int):
    """Heads must divide evenly over the TP group (vLLM: num_attention_heads % tp == 0)."""
    if tp > 1 and spec.n_heads % tp:
        raise UserError(f"{spec.id}: {spec.n_heads} attention heads do not split over tp={tp}",
                        "choose a tp that divides the head count")


def llama_split_layers(n_layers: int, devices: int) -> list[tuple[int, int]]:
    """llama.cpp's layer split over ``devices`` equal devices (llama-model.cpp, ``load_tensors``): the split points
    are the devices' cumulative shares of free memory (equal here), the output layer counts as layer ``n_layers``,
    and layer ``il`` goes to the first device whose cumulative share exceeds ``il / (n_layers + 1)``, i.e.
    ``il * devices // (n_layers + 1)``. The first devices hold one layer more than an even split where the
    output tips the count: 48 layers over two GPUs are 25 + 23 (+ the output), 36 are 19 + 17."""
    if devices > n_layers:
        raise UserError(f"{devices} pipeline stages for {n_layers} layers", "use fewer stages")
    starts = [-(-d * (n_layers + 1) // devices) for d in range(devices)] + [n_layers]
    return [(starts[d], starts[d + 1]) for d in range(devices)]


def input_layer_on_host(engine, hw) -> bool:
    """llama.cpp keeps the token embedding (its input layer) in host RAM whatever ``-ngl`` says ("there is very
    little benefit to offloading the input layer, so always keep it on the CPU": llama-model.cpp,
    ``load_tensors``); a tied output layer is a copy of it on the last device. On a discrete GPU that table is
    not in device memory; on a SoC host RAM is the device's memory, and it stays counted there."""
    return runtime_of(engine) == "llama.cpp" and getattr(hw, "kind", "") == "gpu"


def buffer_prompt(engine, prompt: int, tokens: int, ubatch: int) -> int:
    """The prompt length a run's compute buffer is sized for (``memory.activation_bytes``): llama.cpp reserves its
    worst-case graph when the context is made, a full micro-batch of ``min(n_ctx, n_ubatch)`` tokens whatever the
    prompt (llama-context.cpp, "reserve worst-case graph"), so a decode-only run holds it too; other engines: the
    prompt."""
    return max(prompt, min(tokens, ubatch)) if runtime_of(engine) == "llama.cpp" else prompt


def split_layers(n_layers: int, stages: int) -> list[tuple[int, int]]:
    """Contiguous blocks of layers, as even as possible. The first stage also holds the embedding
    and the last the LM head, so leftover layers go to the middle stages first."""
    if stages > n_layers:
        raise UserError(f"{stages} pipeline stages for {n_layers} layers", "use fewer stages")
    base, rem = divmod(n_layers, stages)
    order = list(range(1, stages - 1)) + [stages - 1, 0] if stages > 2 else list(range(stages))[::-1]
    extra = set(order[:rem])
    out, start = [], 0
    for s in range(stages):
        n = base + (1 if s in extra else 0)
        out.append((start, start + n))
        start += n
    return out
