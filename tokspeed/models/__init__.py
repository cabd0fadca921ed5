"""Model architectures: the shape of a transformer, its parameter count, and where to find one."""

from .spec import ModelSpec

__all__ = ["ModelSpec"]
