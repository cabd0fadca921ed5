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


def test_one_window_rule_counts_context_prompt_and_gen():
    from tokspeed.models import window

    # Llama 3 8B: max_position_embeddings 8,192 (its config.json)
    assert window.within(8192, 8191, 0, 1) and not window.within(8192, 8192, 0, 1)
    assert window.within(0, 10**9, 0, 1)                        # an unknown window holds anything
    assert window.longest_context(8192, 512, 1) == 7679 and window.longest_context(100, 512, 1) == -1
    assert "8,192 + prompt 512 + gen 1 = 8,705" in window.reason("llama-3-8b", 8192, 8192, 512, 1)


def test_fit_without_context_clamps_to_each_window_and_says_so():
    out = json.loads(run_cli("fit", "--hardware", "rtx-4090", "--family", "llama", "--max-params", "10",
                             "--json").stdout)
    rows = {r["model"]: r for r in out}
    # 8,192 - prompt 512 - gen 1 = 7,679 for the 8K-window Llama 3; 4,096 - 513 = 3,583 for Llama 2
    assert rows["llama-3-8b"]["context"] == 7679 and rows["llama-3-8b"]["fits"] is True
    assert rows["llama-2-7b"]["context"] == 3583 and rows["llama-2-7b"]["fits"] is True
    assert rows["llama-3.1-8b"]["context"] == 8192               # a 128K window: the default stands
    assert not any("reason" in r for r in out)
    text = run_cli("fit", "--hardware", "rtx-4090", "--family", "llama", "--max-params", "10").stdout
    assert "no: window" not in text and "(or the model's window)" in re.sub(r"\s+", " ", text)
