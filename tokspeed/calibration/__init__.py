"""Calibration data: the published measurements in ``data/validation/calibration.csv`` as rows that
``tokspeed.predict`` can be evaluated on, their device families, and the error of a prediction.

The fit itself lives in ``scripts/fit_calibration.py`` (it needs scipy); nothing here is imported by
``tokspeed predict``.
"""

from .families import device_family
from .rows import DEFAULT_CSV, CalibrationRow, load_rows

__all__ = ["CalibrationRow", "DEFAULT_CSV", "device_family", "load_rows"]
