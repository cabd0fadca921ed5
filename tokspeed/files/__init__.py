"""Reading real model files: GGUF, safetensors, Hugging Face folders/cache, the Ollama store.

Only headers are read (tensor names, types, shapes, byte sizes, metadata); tensor data is never
loaded. ``open_model(arg)`` (in ``loader``) turns a MODEL argument into a ``ModelFile``: the
ModelSpec, the list of tensors and a ``FileStorage`` that answers the exact bytes of each weight.
"""
