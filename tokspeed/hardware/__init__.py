"""Hardware: devices (GPU, SoC, CPU memory system, accelerator), their links, and where to find one."""

from .catalog import get_hardware, hardware_from_flags, hardware_from_toml
from .devices import all_hardware
from .links import all_links, get_link
from .spec import Hardware

__all__ = ["Hardware", "all_hardware", "get_hardware", "hardware_from_flags", "hardware_from_toml",
           "all_links", "get_link"]
