"""The trained context window in sweep and predict's table: a row past it never reads as a plain "yes", and
the largest context it states agrees with the rows (issue 29)."""

import json
import re

from tokspeed.cli.sweep import largest_contexts, past_window
from tokspeed.report.predict_table import context_cell
from tokspeed import predict

from conftest import run_cli

SWEEP = ("sweep", "llama-3.1-8b", "--bandwidth", "1TB/s", "--memory", "1000GB", "--engine", "ideal", "--quant", "F16",
         "--context", "131071,131072")


def test_the_row_one_token_past_the_window_is_not_a_plain_yes():
    rows = json.loads(run_cli(*SWEEP, "--json").stdout)
    # Llama 3.1's window is 131,072 tokens; a sweep row holds context + prompt 0 + gen 1 tokens
    assert [past_window(r) for r in rows] == [False, True]
    assert "131,071" in largest_contexts(rows)
    out = run_cli(*SWEEP).stdout
    lines = [ln for ln in out.splitlines() if "131,07" in ln and "│" in ln]
    assert "yes" in lines[0] and "past window" in lines[1] and "yes" not in lines[1]
    assert "Longest context that fits: F16 batch 1: 131,071" in re.sub(r"\s+", " ", out)


def test_a_1m_context_on_a_4k_model_says_why_no_sequence_fits():
    p = predict("llama-2-7b", "h100-sxm", quant="Q4_K_M", context=1 << 20)
    value, how = context_cell(p.memory, p)
    assert value == "4,096 / none"                  # the trained window caps the context; nothing fits at 1M
    assert "trained window" in how and f"{(1 << 20) + 512 + 128:,} tokens" in how
    ok = predict("llama-2-7b", "h100-sxm", quant="Q4_K_M", context=1024)
    assert context_cell(ok.memory, ok)[1].endswith("sequences at this context")
