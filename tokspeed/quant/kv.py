"""KV-cache element types: bytes per cached value (llama.cpp ``--cache-type-k/v``, vLLM ``kv_cache_dtype``)."""

from ..errors import UserError, did_you_mean

# q8_0 / q4_0 are GGML blocks of 32 values: 34 and 18 bytes.
KV_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "fp8": 1.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


def kv_bytes(dtype: str) -> float:
    key = dtype.strip().lower().replace("fp16", "f16").replace("fp32", "f32")
    if key not in KV_BYTES:
        raise UserError(f"unknown KV-cache dtype {dtype!r}", did_you_mean(key, KV_BYTES) or
                        "choose one of " + ", ".join(KV_BYTES), field="kv_dtype")
    return KV_BYTES[key]
