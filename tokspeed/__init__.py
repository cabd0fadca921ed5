"""tokspeed: predict, measure and explain the cost of generating one LLM token on any hardware.

    >>> import tokspeed
    >>> p = tokspeed.predict("llama-3-8b", "rtx-4090", quant="Q4_K_M")
    >>> p.decode.tok_s

Prediction is pure arithmetic and never imports torch.
"""

__version__ = "0.1.0"


def predict(model, hardware, **options):
    """Predict memory fit, bytes per token, decode and prefill speed. See ``tokspeed.predict``."""
    from .predict import predict as _predict

    return _predict(model, hardware, **options)


__all__ = ["predict", "__version__"]
