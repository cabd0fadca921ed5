"""``--quant`` names -> a WeightStorage that gives every tensor its format and bytes.

GGUF names follow llama.cpp (see ``llamacpp_mix``); the others follow the checkpoints people run:
FP8 (vLLM/TensorRT-LLM: linear layers FP8, embeddings and LM head BF16), INT8 and INT4-Gn (gpt-fast:
every linear layer incl. the LM head quantized, embedding BF16), GPTQ/AWQ (HF: linear layers packed
4-bit + fp16 scale + 4-bit zero per group, LM head and embedding FP16), EXL2-<bpw> (ExLlamaV2: linear
layers at the target bpw, LM head at 6 bpw — its default ``head_bits`` — embedding FP16).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..derived import hash_once
from ..errors import UserError, did_you_mean
from . import formats
from .dynamic import IK_FTYPES, ik_output_type, sized, split_size, ud_base
from .format_table import help_names, layout
from .formats import Format
from .llamacpp_mix import DEFAULT as GGUF_FTYPES, tensor_type

MLX_BITS = (3, 4, 6, 8)
NAMES = help_names()      # formats.toml rows and the patterns parsed below
LINEAR_ROLES = {"attn_q", "attn_k", "attn_v", "attn_output", "attn_q_a", "attn_q_b", "attn_kv_a_mqa",
                "attn_kv_b", "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_exps", "ffn_up_exps",
                "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"}


@hash_once
@dataclass(frozen=True)
class QuantScheme:
    """A WeightStorage driven by rules (uniform formats, or a llama.cpp mixed ftype)."""

    name: str
    linear: Format | None = None        # uniform formats
    embedding: Format | None = None
    lm_head: Format | None = None
    small: Format = formats.GGML["F32"]  # norms, biases, router
    experts: Format | None = None       # MXFP4: expert stacks differ from the rest
    ftype: str = ""                      # llama.cpp mixed ftype
    ik_ftype: str = ""                   # ik_llama.cpp ftype (its own type on every matrix; tokspeed.quant.dynamic)
    row_scale_bytes: float = 0.0         # per output row (INT8 per-channel scale)
    n_layers: int = 0
    n_gqa: int = 1
    n_experts: int = 0
    is_70b: bool = False
    tied: bool = False                   # tied embeddings: llama.cpp gives token_embd the output's type

    def format_for(self, role: str, layer: int | None, cols: int) -> Format:
        if role == "token_embd" and self.tied:
            role = "output"
        elif role == "per_layer_token_embd" and not self.ftype:     # a second embedding table (Gemma 3n)
            role = "token_embd"
        if self.ik_ftype and role not in ("norm", "ffn_gate_inp"):
            return formats.ggml(ik_output_type(self.ik_ftype, cols) if role == "output" else self.ik_ftype)
        if self.ftype:
            return formats.ggml(tensor_type(self.ftype, role, layer, self.n_layers, cols, n_gqa=self.n_gqa,
                                            n_experts=self.n_experts, is_70b=self.is_70b))
        if role in ("norm", "ffn_gate_inp"):
            return self.small
        if role == "token_embd":
            return self.embedding or self.linear
        if role == "output":
            return self.lm_head or self.linear
        if self.experts is not None and role.endswith("_exps"):
            return self.experts
        return self.linear

    def tensor_bytes(self, role: str, layer: int | None, rows: int, cols: int) -> float:
        fmt = self.format_for(role, layer, cols)
        extra = rows * self.row_scale_bytes if role in LINEAR_ROLES or (role == "output" and fmt is self.linear) else 0
        return fmt.tensor_bytes(rows, cols) + extra

    def element_bytes(self, role: str, layer: int | None, cols: int = 4096) -> float:
        return self.format_for(role, layer, cols).bytes_per_weight


# llama-bench and GGUF metadata spell the file type ("model" column: "llama 8B Q4_K - Medium", "gpt-oss 20B MXFP4
# MoE", "IQ4_XS - 4.25 bpw"); ARM-repacked Q4_0 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) keeps Q4_0's blocks
LLAMA_BENCH_SIZES = {"SMALL": "S", "MEDIUM": "M", "LARGE": "L"}


@lru_cache(maxsize=1024)
def canonical(name: str) -> str:
    """A format name as the tables spell it (upper case, llama-bench's and the hubs' spellings mapped); kept per
    name (a pure function of the text: warm ``predict`` asks it several times an answer)."""
    q = re.sub(r"\s+", " ", name.strip().upper()).replace("GPTQ-INT4", "GPTQ-4B-G128")
    if q in ("FP16",):
        q = "F16"
    if q in ("FP32",):
        q = "F32"
    if q == "INT8 (WEIGHT-ONLY)":
        q = "INT8"
    m = re.fullmatch(r"(Q[2-6])_K - (SMALL|MEDIUM|LARGE)", q)
    if m:       # "Q4_K - Medium" -> Q4_K_M; llama-bench calls Q2_K "Q2_K - Medium"
        full = f"{m.group(1)}_K_{LLAMA_BENCH_SIZES[m.group(2)]}"
        short = f"{m.group(1)}_K"
        return short if full not in GGUF_FTYPES and m.group(2) == "MEDIUM" and short in GGUF_FTYPES else full
    q = re.sub(r" - \d+(?:\.\d+)? BPW$", "", q)            # "IQ4_XS - 4.25 bpw"
    q = re.sub(r"^(MXFP4) MOE$", r"\1", q)
    q = re.sub(r"^Q4_0_[48]_[48]$", "Q4_0", q)
    m = re.fullmatch(r"EXL2[ _-]?(\d+(?:\.\d+)?) ?BPW", q)
    if m:
        q = f"EXL2-{m.group(1)}"
    m = re.fullmatch(r"(?:MLX[ _-]?)?Q?([3468])[ _-]?BITS?(?: ?\(?MLX\)?)?", q)
    if m and ("MLX" in q or "BIT" in q):      # mlx-community repos: "4bit", "MLX 4-bit", "mlx-q8"
        q = f"MLX-{m.group(1)}BIT"
    m = re.fullmatch(r"MLX[ _-]?Q([3468])", q)
    if m:
        q = f"MLX-{m.group(1)}BIT"
    q = re.sub(r"^FP8[ _](BLOCK)$", r"FP8-\1", q)
    q = re.sub(r"^(IQ[1-6]_K[A-Z]*)_R4$", r"\1", q)     # ik_llama.cpp's row-interleaved repack: the same bytes
    return "AWQ-4B" if q == "AWQ" else q


def scheme_for(name: str, spec=None) -> QuantScheme:
    """The QuantScheme for a ``--quant`` name, specialised to a model (layer count, GQA, experts); ``NAME@<size>``
    scales that scheme to the stated file size (tokspeed.quant.dynamic)."""
    base, size = split_size(name)
    if size:
        return sized(scheme_for(base, spec), size, spec, canonical(name))
    try:
        return _scheme_for(name, spec)
    except TypeError:          # an unhashable spec
        return _scheme_for.__wrapped__(name, spec)


@lru_cache(maxsize=256)
def _scheme_for(name: str, spec=None) -> QuantScheme:
    q = canonical(name)
    f = formats.GGML
    n_layers = spec.n_layers if spec else 32
    ctx = dict(n_layers=n_layers,
               n_gqa=(spec.n_heads // spec.n_kv_heads) if spec else 1,
               n_experts=spec.n_experts if spec else 0,
               is_70b=bool(spec and spec.n_layers == 80 and spec.family in ("llama", "qwen2")),
               tied=bool(spec and spec.tied_embeddings))
    lay = layout(q)
    if lay is not None:     # a uniform layout (formats.toml: linear, embedding, lm_head, small, experts)
        return QuantScheme(q, **{k: v if k == "row_scale_bytes" else formats.storage(v) for k, v in lay.items()},
                           **ctx)
    if q in GGUF_FTYPES:
        return QuantScheme(q, ftype=q, **ctx)
    if ud_base(q) in GGUF_FTYPES:           # Unsloth dynamic: its base ftype's mix (a size scales it)
        return QuantScheme(q, ftype=ud_base(q), **ctx)
    if q in IK_FTYPES:
        return QuantScheme(q, ik_ftype=q, **ctx)
    m = re.fullmatch(r"MLX-(\d)BIT", q)
    if m and int(m.group(1)) in MLX_BITS:
        # mlx-lm quantizes every Linear and the Embedding (nn.quantize), norms stay FP16
        fmt = formats.mlx_affine(int(m.group(1)))
        return QuantScheme(q, linear=fmt, embedding=fmt, lm_head=fmt, small=f["F16"], **ctx)
    m = re.fullmatch(r"INT4(?:-G(\d+))?", q)
    if m:
        g = int(m.group(1) or 32)
        return QuantScheme(q, linear=formats.int4_group(g), embedding=f["BF16"], small=f["BF16"], **ctx)
    if q in ("GPTQ-4B-G128", "AWQ-4B", "AWQ-4B-G128", "GPTQ"):
        fmt = formats.int4_group(128, 2.0, 0.5, q)
        return QuantScheme(q, linear=fmt, embedding=f["F16"], lm_head=f["F16"], small=f["F16"], **ctx)
    m = re.fullmatch(r"(GPTQ|AWQ)-([48])B-G(32|64|128)", q)
    if m:      # GPTQ/AWQ at another width or group: packed ints + fp16 scale + packed zero of the same width
        bits, g = int(m.group(2)), int(m.group(3))
        fmt = formats.Format(q, g, g * bits / 8 + 2.0 + bits / 8, f"{bits}-bit, group {g}: fp16 scale + zero")
        return QuantScheme(q, linear=fmt, embedding=f["F16"], lm_head=f["F16"], small=f["F16"], **ctx)
    m = re.fullmatch(r"EXL2-(\d+(?:\.\d+)?)", q)
    if m:
        bpw = float(m.group(1))
        if not 2.0 <= bpw <= 8.0:
            raise UserError(f"EXL2 bits per weight must be between 2 and 8, got {bpw:g}")
        return QuantScheme(q, linear=formats.exl2(bpw), embedding=f["F16"], lm_head=formats.exl2(6.0),
                           small=f["F16"], **ctx)

    raise UserError(f"unknown quant {name!r}", did_you_mean(q, NAMES) or "choose one of " + " ".join(NAMES),
                    field="quant")
