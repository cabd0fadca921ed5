"""tokspeed: predict, measure and explain the cost of generating one LLM token on any hardware.

    >>> import tokspeed
    >>> p = tokspeed.predict("llama-3-8b", "rtx-4090", quant="Q4_K_M")
    >>> p.decode.tok_s

Prediction is pure arithmetic and never imports torch.
"""

__version__ = "0.1.0"


# The function shadows the submodule of the same name on purpose: ``tokspeed.predict(...)`` is the API,
# ``from tokspeed.predict import Prediction`` still reaches the module (it is in sys.modules).
from .predict import Prediction, predict  # noqa: E402  (pure arithmetic: no heavy imports)

__all__ = ["predict", "Prediction", "__version__"]
