"""Prompt series rising with their length (tokspeed/calibration/series.py): which series are not scored, by hand."""

from types import SimpleNamespace

from tokspeed.calibration.rows import load_rows
from tokspeed.calibration.series import SKIP, rising_series


def row(i, prompt, tok_s, n_batch=2048, **kw):
    base = dict(id=f"x{i}", source="s", hw=SimpleNamespace(name="gpu"), n_devices=1, parallel="none", model="m",
                quant="F16", engine="llama.cpp-cuda", context=0, batch=1, flags="", ubatch=512, n_batch=n_batch,
                date="2024-05", build="", driver="", metric="prefill", prompt=prompt, tok_s=tok_s)
    base.update(kw)
    return SimpleNamespace(**base)


def test_a_series_rising_to_long_prompts_is_flagged():
    rising = [row(0, 512, 604), row(1, 1024, 681), row(2, 4096, 866), row(3, 8192, 1323)]
    assert rising_series(rising) == {"x0", "x1", "x2", "x3"}


def test_falling_levelling_short_or_ambiguous_series_are_kept():
    falling = [row(0, 512, 7741), row(1, 1024, 7504), row(2, 4096, 6138), row(3, 8192, 4849)]
    assert rising_series(falling) == set()
    # a pipelined split rises while its batches fill the pipeline, then falls past n_batch
    pipelined = [row(0, 512, 4145, n_devices=4), row(1, 1024, 5931, n_devices=4), row(2, 4096, 7545, n_devices=4),
                 row(3, 8192, 6517, n_devices=4)]
    assert rising_series(pipelined) == set()
    # rising only below n_batch (the two longest, 1024 and 1536, are shorter than -b 2048): not evidence
    assert rising_series([row(0, 512, 100), row(1, 1024, 110), row(2, 1536, 120)]) == set()
    assert rising_series([row(0, 512, 100), row(1, 4096, 110)]) == set()             # two lengths: too few
    assert rising_series([row(0, 512, 100), row(1, 512, 90), row(2, 4096, 110), row(3, 8192, 120)]) == set()
    # other settings make other series
    assert rising_series([row(0, 512, 100), row(1, 4096, 110, quant="Q4_K_M"), row(2, 8192, 120)]) == set()


def test_the_shipped_csvs_flag_the_xiongjiedai_rows_that_rise():
    skipped = {r.id for r in load_rows() if r.skip == SKIP}
    # Llama 3 8B F16 on the A100 SXM4 (r0902-r0905) and the L40S (r0830-r0833), 70B Q4_K_M on the A40 (r0814-r0817),
    # and the one scorable row (pp512, one micro-batch) of each multi-GPU series that rises to 8,192 tokens
    assert {f"r{i:04d}" for i in (*range(902, 906), *range(830, 834), *range(814, 818))} <= skipped
    assert {"r1134", "r0950", "r1046", "r1070", "r1142"} <= skipped
    assert len(skipped) == 17
