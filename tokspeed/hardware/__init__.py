"""Hardware: devices (GPU, SoC, CPU memory system), their links, and where to find one."""

from .spec import Hardware

__all__ = ["Hardware"]
