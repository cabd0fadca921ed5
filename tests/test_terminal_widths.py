"""Every table is readable at 80 and 100 columns when piped with COLUMNS set: no line of a table is wider
than the terminal, no cell is cut ("…"), and every number the verb computes appears whole in a cell.

The numbers are taken from the verb's own --json output and formatted the way the tables print them
(tokspeed.units), then looked for as whole cells: the test checks the rendering, not the arithmetic."""

import json
import os
import re
import subprocess
import sys

import pytest

from tokspeed.units import fmt_bytes, fmt_rate

BOX = set("│┃┏┓┗┛┡┩└┘├┤┼╇╈┳┻━─┯┷")


def cli(*args, columns):
    env = dict(os.environ, COLUMNS=str(columns))
    r = subprocess.run([sys.executable, "-m", "tokspeed", *map(str, args)], capture_output=True, text=True, env=env,
                       timeout=240)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout


def table_lines(out: str) -> list[str]:
    return [line.rstrip() for line in out.splitlines() if line.strip() and line.strip()[0] in BOX]


def cells(out: str) -> set[str]:
    """Every cell's text on one table line (a cell folded over lines appears as its pieces)."""
    got = set()
    for line in table_lines(out):
        for c in re.split(r"[│┃]", line):
            if c.strip():
                got.add(c.strip())
    return got


def check_fits(out: str, width: int):
    lines = table_lines(out)
    assert lines, "no table printed"
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, f"{len(too_wide)} table lines wider than {width}: {too_wide[0]!r}"
    assert "…" not in "".join(lines), "a cell was cut"


def assert_whole(out: str, numbers):
    cs = cells(out)
    for n in numbers:
        assert any(n == c or re.search(rf"(^|\s){re.escape(n)}(\s|$|\*)", c) for c in cs), \
            f"{n!r} not whole in any cell"


WIDTHS = (80, 100)


@pytest.mark.parametrize("width", WIDTHS)
def test_predict_at_width(width):
    args = ("predict", "llama-3.1-70b", "--hardware", "rtx-4090", "-q", "Q4_K_M")
    out = cli(*args, columns=width)
    check_fits(out, width)
    d = json.loads(cli(*args, "--json", columns=width))
    m = d["memory"]
    assert_whole(out, [f"{fmt_bytes(m['total_bytes'])} / {fmt_bytes(m['capacity_bytes'])}",
                       f"{fmt_rate(d['decode']['tok_s'])} tok/s", fmt_bytes(d["decode"]["bytes_per_token"])])
    # the headline says it does not fit, and the ways to run it follow with their figures
    assert out.splitlines()[0].startswith("DOES NOT FIT")
    assert "ways to run it" in out and "tok/s decode" in out.split("ways to run it")[1]
    assert "(hypothetical)" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_explain_at_width(width):
    args = ("explain", "llama-3-8b", "--hardware", "rtx-4090", "-q", "Q4_K_M")
    out = cli(*args, columns=width)
    check_fits(out, width)
    d = json.loads(cli(*args, "--json", columns=width))
    from tokspeed.units import fmt_seconds

    stage_times = [fmt_seconds(s["seconds"]) for s in d["stages"]]
    assert_whole(out, stage_times + [fmt_bytes(s["bytes"]) for s in d["stages"] if s["bytes"]])
    # stage names wrap at spaces, never cut: each word of each stage is whole in some cell
    words = {w for c in cells(out) for w in c.split()}
    for s in d["stages"]:
        assert set(s["label"].split()) <= words, s["label"]


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_at_width(width):
    args = ("compare", "llama-3-8b", "--hardware", "rtx-4090,h100-sxm,m4-max-40", "-q", "Q4_K_M,F16")
    out = cli(*args, columns=width)
    check_fits(out, width)
    rows = json.loads(cli(*args, "--json", columns=width))
    assert_whole(out, [fmt_rate(r["decode"]["tok_s"]) for r in rows])
    assert {"rtx-4090", "h100-sxm", "m4-max-40"} <= cells(out)


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_at_width(width):
    args = ("sweep", "llama-3-8b", "--hardware", "rtx-4090", "-q", "F16,Q4_K_M", "--batch", "1,8")
    out = cli(*args, columns=width)
    check_fits(out, width)
    rows = json.loads(cli(*args, "--json", columns=width))
    assert_whole(out, [fmt_rate(r["decode"]["tok_s"]) for r in rows] + [f"{r['context']:,}" for r in rows])
    assert "DOES NOT FIT" in out.splitlines()[0]        # F16 at 128K context is 32 GB on a 24 GB card
    ways = out.split("ways to run what does not fit")[1]
    assert "F16 batch 1 at context" in ways and "tok/s decode" in ways


@pytest.mark.parametrize("width", WIDTHS)
def test_models_at_width(width):
    out = cli("models", "llama", columns=width)
    check_fits(out, width)
    ms = json.loads(cli("models", "llama", "--json", columns=width))
    from tokspeed.cli.models import _count

    assert_whole(out, [_count(m["n_params"]) for m in ms])
    assert "8.03B" in cells(out)            # Llama 3 8B: 8.03 billion parameters (Meta's model card)
    # no zero-width column: every header cell has text
    header = next(line for line in table_lines(out) if "params" in line)
    assert "┃┃" not in header.replace(" ", "")


@pytest.mark.parametrize("width", WIDTHS)
def test_hardware_at_width(width):
    out = cli("hardware", "--kind", "gpu", columns=width)
    check_fits(out, width)
    assert_whole(out, ["1,008", "3,350", "165.2"])    # RTX 4090 and H100 SXM vendor figures
    # names are shown at a readable width (at least "NVIDIA" whole), never squeezed to 5 characters
    assert "NVIDIA" in " ".join(cells(out))
    out = cli("hardware", "--links", columns=width)
    check_fits(out, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_plan_at_width(width):
    out = cli("plan", "llama-3-8b", "--target-tok-s", "30", "--hardware", "rtx-4090,h100-sxm,rtx-3060",
              "--all", columns=width)
    check_fits(out, width)


@pytest.mark.parametrize("columns", [80, 100])
def test_measure_table_keeps_every_number_whole(columns):
    """`tokspeed measure`'s measured-beside-predicted table (printed from the run file): at 80 columns the
    least important columns go (named under the table), and no number or header word is cut."""
    import io

    from rich.console import Console

    from tokspeed.cli.measure import print_run

    point = {"batch": 1, "context": 2048, "prefill_tok_s": 189.6, "decode_tok_s": 9.03, "decode_step": {"unstable": True},
             "error_pct": -18.2, "achieved_gbps": 18.3, "mbu": 0.97, "mfu": 0.053,
             "predicted": {"prefill_tok_s": 220.9, "tok_s": 7.39, "source": "tokspeed.predict"}}
    run = {"model": {"id": "qwen2.5-0.5b", "source": "random"}, "quant": "F32", "backend": "torch", "device": "cpu",
           "hardware": {"id": "local"}, "points": [point], "counted": "bytes per decode step"}
    buf = io.StringIO()
    print_run(run, Console(file=buf, width=columns))
    out = buf.getvalue()
    assert all(len(line) <= columns for line in table_lines(out)) and "…" not in out
    assert {"189.6", "220.9", "9.03 !", "7.39", "-18 %", "97%"} <= cells(out)
