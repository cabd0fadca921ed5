#!/usr/bin/env python3
"""Which calibration rows tokspeed cannot answer, and why, grouped (unknown model / quant / engine / device).

    python scripts/calibration_coverage.py [CSV ...]     (default: every file of tokspeed.calibration CALIBRATION_CSVS)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tokspeed.calibration.answered import report  # noqa: E402
from tokspeed.calibration.rows import load_rows  # noqa: E402


def main(argv=None) -> int:
    paths = (argv if argv is not None else sys.argv[1:]) or None
    print(report(load_rows(paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
