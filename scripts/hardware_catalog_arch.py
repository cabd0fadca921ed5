"""Architecture and matrix units of the catalog devices that only ``data/validation/calibration.csv`` names (the
reference CSV states its own rows' in its ``arch`` and ``matrix_units`` columns). Apple GPU bins and unstated
variants take their chip's reference row (``build_hardware_catalog.same_chip_arch``).

    ``CAL_ARCH``: catalog id -> (arch, matrix units, source)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tokspeed.hardware.arch import default_matrix_units  # noqa: E402

_GA10X = "NVIDIA Ampere GA102 GPU architecture whitepaper (GA10x: 128 FP32 lanes per SM, cc 8.6)"
_AD10X = "NVIDIA Ada GPU architecture whitepaper (AD10x: 128 FP32 lanes per SM, FP8 tensor cores, cc 8.9)"
_ORIN = ("NVIDIA Jetson AGX Orin series technical brief (Ampere GA10B GPU, cc 8.7; 12 Arm Cortex-A78AE cores with "
         "the int8 dot product)")

CAL_ARCH: dict[str, tuple[str, tuple[str, ...], str]] = {
    **{i: ("ampere", default_matrix_units("ampere"), _GA10X) for i in ("rtx-3070", "rtx-3080-ti")},
    **{i: ("ada", default_matrix_units("ada"), _AD10X) for i in ("rtx-4070-ti", "rtx-4070-ti-super", "rtx-4080-super",
                                                                 "rtx-4070-laptop", "rtx-4000-ada", "rtx-5000-ada")},
    "jetson-agx-orin-64g": ("ampere", default_matrix_units("ampere") + ("neon", "neon-dotprod"), _ORIN),
}
