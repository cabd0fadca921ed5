"""The product speaks of itself only: no story of how it was written (rounds, sessions, the project's own
issue numbers, figures "recalled") and no path outside the repository (`../shared`, `shared/reference`), in the
package, its data, its docs and the README. Provenance is stated as the product's own: source, date, confidence,
paths under `data/`."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = {".py", ".toml", ".md", ".csv", ".js", ".html", ".json", ".txt", ".css"}
NARRATION = [
    r"\bthis round\b", r"\b(last|earlier|previous|next) round\b", r"\b(this|last|previous|earlier) session\b",
    r"\bin a session\b", r"\bthe session (that|in which)\b",
    r"(?<![#\w])issues? \d{1,3}\b",       # the project's own issues; a tracker's are '#1234' or 4+ digits
    r"\brecalled\b",
]
OUTSIDE = [r"\.\./shared\b", r"(?<![\w./-])shared/(reference|validation|model-configs|seeds)\b"]


def _files():
    for top in ("tokspeed", "data", "docs"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts:
                yield p
    yield ROOT / "README.md"


def _hits(patterns):
    out = []
    for p in _files():
        text = p.read_text(encoding="utf-8", errors="replace")
        for pat in patterns:
            for m in re.finditer(pat, text, flags=re.IGNORECASE):
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{p.relative_to(ROOT)}:{line}: {m.group(0)!r}")
    return out


@pytest.mark.parametrize("patterns", [NARRATION, OUTSIDE], ids=["narration", "outside-paths"])
def test_the_package_data_and_docs_speak_of_the_product_only(patterns):
    hits = _hits(patterns)
    assert not hits, "\n".join(hits[:40])


def test_the_scan_finds_what_it_looks_for():
    # each pattern matches the phrase it is written for, and leaves a tracker's issue alone
    samples = {"as recalled": NARRATION, "since issue 27 the prior": NARRATION, "in this round": NARRATION,
               "see ../shared/validation": OUTSIDE, "from shared/reference/x.md": OUTSIDE}
    for text, pats in samples.items():
        assert any(re.search(p, text, re.IGNORECASE) for p in pats), text
    for text in ("llama.cpp issue 17628", "github issue #1264", "only the last rounds to A3B", "data/shared/x"):
        assert not any(re.search(p, text, re.IGNORECASE) for p in NARRATION + OUTSIDE), text
