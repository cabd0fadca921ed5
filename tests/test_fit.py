"""`tokspeed fit`: every catalog model on one device, best format that fits, ranked by the stated rule."""

import json

import pytest

from tokspeed import predict
from tokspeed.errors import UserError
from tokspeed.advise.runs_here import _bisect, _walk, rank_models, supported_formats
from tokspeed.hardware.catalog import get_hardware
from tokspeed.models.catalog import get_model, model_ids
from tokspeed.quant.format_table import fit_formats, quality_for

GGUF_FORMATS = fit_formats("llama.cpp")

from conftest import run_cli


@pytest.fixture(scope="module")
def rows_4090():
    return rank_models("rtx-4090")


def _group(r):
    return 0 if r.fits and r.meets_min_tok_s else 1 if r.fits else 2


def test_every_catalog_model_ranked_fitting_first_largest_first(rows_4090):
    assert sorted(r.model for r in rows_4090) == sorted(model_ids())
    groups = [_group(r) for r in rows_4090]
    assert groups == sorted(groups)
    fitting = [r for r in rows_4090 if r.fits]
    assert fitting and all(a.params_b >= b.params_b for a, b in zip(fitting, fitting[1:]))
    for a, b in zip(fitting, fitting[1:]):      # equal size: faster first
        if a.params_b == b.params_b:
            assert a.decode["tok_s"] >= b.decode["tok_s"]


def test_no_405b_on_a_24gb_card(rows_4090):
    r = next(r for r in rows_4090 if r.model == "llama-3.1-405b")
    assert not r.fits and r.offload == "none" and r.hypothetical
    # by hand: even Q2_K's main type (2.625 bits per weight) puts 405.9e9 weights far beyond 24 GB
    assert r.memory["weights_bytes"] > 405.9e9 * 2.625 / 8 > 24e9
    # the largest that fits: Nemotron-H 56B at Q2_K (56.3e9 x 2.625 / 8 = 18.5 GB of weights, KV on 10 of 64 layers)
    assert all(x.params_b < 60 for x in rows_4090 if x.fits)


@pytest.mark.parametrize("mid", ["qwen2.5-32b", "llama-3-8b", "gemma-3-27b", "qwen3-30b-a3b", "phi-4"])
def test_choice_is_the_highest_precision_format_predict_says_fits(rows_4090, mid):
    """The public predict() agrees: the chosen format fits, the next more precise one does not."""
    r = next(r for r in rows_4090 if r.model == mid)
    i = GGUF_FORMATS.index(r.quant)
    run = dict(context=8192, prompt=512, gen=1)
    assert predict(mid, "rtx-4090", quant=r.quant, **run).memory.fits
    if i > 0:
        assert not predict(mid, "rtx-4090", quant=GGUF_FORMATS[i - 1], **run).memory.fits
    p = predict(mid, "rtx-4090", quant=r.quant, **run)
    assert r.decode["tok_s"] == pytest.approx(p.decode.tok_s) and r.ttft_s == pytest.approx(p.ttft_s)


def test_llama3_8b_keeps_f16_on_24gb(rows_4090):
    # by hand: 8.03e9 weights x 2 B = 16.06 GB, KV 8705 tokens x 131,072 B = 1.14 GB: far under 24 GB
    r = next(r for r in rows_4090 if r.model == "llama-3-8b")
    assert r.quant == "F16" and r.memory["kv_bytes"] == 8705 * 131072


def test_min_tok_s_pushes_to_smaller_formats_and_groups():
    rows = rank_models("rtx-4090", min_tok_s=40, family="qwen2.5")
    met = [r for r in rows if r.fits and r.meets_min_tok_s]
    assert met and all(r.decode["tok_s"] >= 40 for r in met)
    q32 = next(r for r in rows if r.model == "qwen2.5-32b")
    # Q4_K_M decodes ~30 tok/s on a 4090: 40 tok/s needs a smaller format, or the row says it is slower
    assert GGUF_FORMATS.index(q32.quant) > GGUF_FORMATS.index("Q4_K_M") or not q32.meets_min_tok_s
    assert [_group(r) for r in rows] == sorted(_group(r) for r in rows)


def test_offload_only_for_models_that_fit_nowhere():
    rows = rank_models("rtx-4090", offload="auto", family="llama", context=4096)
    by = {r.model: r for r in rows}
    assert by["llama-3-8b"].offload == "none"
    big = by["llama-3.3-70b"]
    assert big.fits and big.offload.startswith("layers") and "on the GPU" in big.offload


def test_filters():
    assert {r.model for r in rank_models("rtx-4090", moe=True)} == {m for m in model_ids() if get_model(m).is_moe}
    assert all(r.params_b <= 8.5 for r in rank_models("rtx-4090", max_params=8.5))
    assert all("code" in r.use for r in rank_models("rtx-4090", use="code"))
    assert {r.model for r in rank_models("rtx-4090", family="gemma3")} == {"gemma-3-1b", "gemma-3-4b", "gemma-3-12b",
                                                                            "gemma-3-27b"}
    assert {r.model for r in rank_models("rtx-4090", family="gemma3n")} == {"gemma-3n-e4b"}   # not a gemma3
    assert len(rank_models("rtx-4090", top=3)) == 3
    with pytest.raises(UserError, match="^use must be one of"):
        rank_models("rtx-4090", use="poetry")


def test_quality_is_llamacpp_published_table():
    # llama.cpp tools/quantize/quantize.cpp: "Q4_K_M ... 4.58G, +0.1754 ppl @ Llama-3-8B"
    assert quality_for("Q4_K_M")["ppl_delta"] == 0.1754
    assert quality_for("Q8_0")["ppl_delta"] == 0.0026
    assert quality_for("IQ4_XS") is None and quality_for("AWQ-4B") is None   # none published: none shown


def test_supported_formats_and_search_helpers():
    assert supported_formats("llama.cpp-cuda")[0] == "F16" and "Q4_K_M" in supported_formats("ollama")
    with pytest.raises(UserError):
        supported_formats("no-such-engine")
    ok = [False, False, True, True]
    assert _bisect(4, lambda i: ok[i]) == 2
    for start in range(5):
        assert _walk(4, lambda i: ok[i], start) == 2
    assert _bisect(3, lambda i: False) == 3 and _walk(3, lambda i: False, 1) == 3


def test_cli_json_shape_and_help():
    r = run_cli("fit", "--hardware", "rtx-4090", "--json", "--top", "5", "--context", "4096")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert len(rows) == 5
    for row in rows:
        assert {"model", "quant", "fits", "offload", "memory", "decode", "prefill", "ttft_s"} <= set(row)
    h = run_cli("fit", "--help")
    assert "largest parameter count first" in h.stdout.replace("\n", " ") and "--min-tok-s" in h.stdout


def test_cli_table_on_apple_and_bad_input():
    r = run_cli("fit", "--hardware", "m4-max-40", "--top", "4")
    assert r.returncode == 0 and "m4" in r.stdout.lower()
    bad = run_cli("fit", "--hardware", "rtx-4090", "--use", "poetry")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    bad = run_cli("fit", "--hardware", "no-such-gpu")
    assert bad.returncode == 2 and "tokspeed: error" in bad.stderr and "Traceback" not in bad.stderr


def test_hardware_object_accepted():
    rows = rank_models(get_hardware("h100-sxm"), family="llama-3.1")
    assert rows[0].model == "llama-3.1-70b" and rows[0].quant == "Q8_0"


# -- what people want: a quality floor, the released format, the trained window (issue 29) ----------------------

LOW = {"Q3_K_M", "Q2_K"}      # below the Q4 class: Q3_K 3.44 and Q2_K 2.625 bits per weight (ggml block sizes)


def test_no_2_or_3_bit_format_and_no_window_too_short_in_the_top_ten(rows_4090):
    top = rows_4090[:10]
    assert not {r.quant for r in top} & LOW
    assert all(get_model(r.model).max_context >= 8192 + 512 + 1 for r in top)
    # the floor holds over every row unless asked: Mixtral 8x7B (46.7 B) no longer comes in at Q2_K
    assert not {r.quant for r in rows_4090} & LOW


def test_low_bits_only_when_asked():
    low = rank_models("rtx-4090", family="mixtral", allow_low_bits=True)
    mx = next(r for r in low if r.model == "mixtral-8x7b")
    # by hand: 46.7e9 weights at Q3_K's 3.44 bits = 20.1 GB + Q6_K head ... fits 24 GB only at 3 bits or fewer
    assert mx.quant in LOW and mx.fits
    floor = next(r for r in rank_models("rtx-4090", family="mixtral") if r.model == "mixtral-8x7b")
    assert floor.quant not in LOW and not floor.fits
    assert "quality" in next(r for r in low if r.model == "mixtral-8x7b").to_dict()     # quality column kept
    q3 = next(r for r in rank_models("rtx-4090", family="mixtral", min_quality="Q3_K_M") if r.model == "mixtral-8x7b")
    assert q3.quant == "Q3_K_M"
    with pytest.raises(UserError, match="min_quality"):
        rank_models("rtx-4090", min_quality="Q9_X")


def test_a_model_released_in_mxfp4_is_ranked_in_mxfp4_never_wider():
    # gpt-oss ships MXFP4 experts: Q8_0 (8.5 bits) holds nothing more than the 4.25-bit release
    rows = rank_models("rtx-4090", family="gpt_oss")
    assert next(r for r in rows if r.model == "gpt-oss-20b").quant == "MXFP4"
    rows = rank_models("h200-sxm", gpus=8, family="deepseek_v3", engine="vllm")
    assert {r.quant for r in rows} == {"FP8"} and all(r.fits for r in rows)


def test_a_context_past_the_trained_window_does_not_fit_unless_rope_scaling():
    rows = rank_models("h100-sxm", context=32768)
    # llama-2-70b (4,096), tinyllama (2,048), gpt-j (2,048): 32,768 + 512 + 1 tokens exceed their windows
    for mid in ("llama-2-70b", "tinyllama-1.1b", "gpt-j-6b"):
        r = next(r for r in rows if r.model == mid)
        assert not r.fits and "trained window" in r.reason and "--rope-scaling" in r.reason
        assert r.to_dict()["fits"] is False and r.to_dict()["reason"] == r.reason
    assert all(get_model(r.model).max_context >= 32768 + 513 for r in rows if r.fits)
    scaled = rank_models("h100-sxm", context=32768, rope_scaling=True, family="llama", max_params=8)
    assert next(r for r in scaled if r.model == "llama-2-7b").fits


def test_cli_flags_for_the_floor_and_the_window():
    r = run_cli("fit", "--hardware", "rtx-4090", "--family", "mixtral", "--allow-low-bits", "--json")
    assert r.returncode == 0 and any(x["quant"] in LOW for x in json.loads(r.stdout))
    bad = run_cli("fit", "--hardware", "rtx-4090", "--min-quality", "Q9_X")
    assert bad.returncode == 2 and "--min-quality" in bad.stderr and "Traceback" not in bad.stderr
    r = run_cli("fit", "--hardware", "h100-sxm", "--family", "llama", "--context", "32K", "--max-params", "8")
    assert "no: window" in r.stdout
