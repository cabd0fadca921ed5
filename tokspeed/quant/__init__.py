"""Quantization: storage formats (bytes per weight), llama.cpp mixes, KV-cache dtypes."""
