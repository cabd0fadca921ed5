#!/usr/bin/env python3
"""Which calibration rows tokspeed cannot answer, and why, grouped (unknown model / quant / engine / device); and the
answered rows as a user gets them (the shipped fit, its stated band).

    python scripts/calibration_coverage.py [--docs] [CSV ...]
        (default: every file of tokspeed.calibration CALIBRATION_CSVS; --docs writes the user-view table of
         calibration-3.csv into docs/calibration.md)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tokspeed.calibration.answered import report, user_table, user_view  # noqa: E402
from tokspeed.calibration.rows import REPO_CSV3, load_rows  # noqa: E402

DOCS = REPO / "docs" / "calibration.md"
START, END = "<!-- user view: start (scripts/calibration_coverage.py --docs) -->", "<!-- user view: end -->"


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        print(__doc__.strip())
        return 0
    docs = "--docs" in args
    paths = [a for a in args if a != "--docs"] or None
    bad = next((p for p in paths or () if p.startswith("-") or not Path(p).is_file()), None)
    if bad:
        print(f"calibration_coverage.py: {bad}: {'unknown option' if bad.startswith('-') else 'no such file'}",
              file=sys.stderr)
        return 2
    rows = load_rows(paths)
    print(report(rows))
    table = user_table(user_view(rows))
    print()
    print(table)
    if docs:
        new = load_rows(REPO_CSV3)
        text = DOCS.read_text()
        a, b = text.index(START), text.index(END)
        body = f"calibration-3.csv as a user gets it:\n\n```\n{report(new)}\n```\n\n{user_table(user_view(new))}"
        DOCS.write_text(text[:a + len(START)] + "\n\n" + body + "\n\n" + text[b:])
        print(f"wrote {DOCS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
