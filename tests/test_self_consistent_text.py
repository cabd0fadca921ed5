"""Text that does not contradict itself: an engine line says "no calibration rows" only when it has none, and no
clause twice; a version note appears only when it is true."""

import re

from tokspeed import predict
from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware


def _source(engine, hw, version=None):
    return get_engine(engine, get_hardware(hw), version=version).source


def test_a_fitted_engine_line_never_says_it_has_no_rows_nor_repeats_a_clause():
    for hw in ("ryzen-ai-max-395", "rtx-4090", "arc-a770"):
        src = _source("llama.cpp", hw)
        if "fitted by" in src:
            assert "no calibration rows" not in src, src
        clauses = [c.strip() for c in re.split(r"[;]", src) if c.strip()]
        assert len(clauses) == len(set(clauses)), src


def test_the_era_note_says_why_the_newest_era_was_taken():
    p = predict("llama-3-8b", "rtx-4090")
    assert "engine_version names another" not in p.engine_source
    assert "no engine_version was given" in p.engine_source
    named = predict("llama-3-8b", "rtx-4090", engine_version="2024")
    assert "no engine_version was given" not in named.engine_source
