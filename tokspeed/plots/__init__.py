"""Charts (matplotlib, imported only when drawing): PNG/SVG files or inline SVG for HTML.

- ``context_figure``: decode tok/s vs context, with weights vs KV bytes per token (``sweep --plot``)
- ``roofline_figure``: every stage of decode and prefill on the device's roofline
- ``hardware_figure``: decode tok/s per device (``compare --plot``)
- ``memory_figure`` / ``prediction_figure``: memory against capacity (+ roofline: ``predict --plot``)
- ``stages_figure``: time per stage of one token, measured beside predicted (``explain --plot``)
- ``measured_figure``: measured vs predicted per run
"""

from .canvas import check_path, save, to_svg
from .context import context_figure
from .hardware_bars import hardware_figure
from .measured import measured_figure
from .memory import memory_figure, prediction_figure
from .roofline import roofline_figure
from .stages import stages_figure

__all__ = ["check_path", "save", "to_svg", "context_figure", "hardware_figure", "measured_figure", "memory_figure",
           "prediction_figure", "roofline_figure", "stages_figure"]
