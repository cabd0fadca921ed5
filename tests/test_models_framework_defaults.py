"""Catalog entries made from a framework's published configuration defaults (transformers 5.25.0's Ministral3Config,
documented as mistralai/Ministral-3-8B-Base-2512, and Qwen3_5TextConfig, "the Qwen3.5-9B style configuration"):
the count is done by hand from the config numbers, and checked against an independent figure: llama-bench's size of
the BF16 GGUF in the calibration rows (2 bytes a parameter; the size is printed in GiB to two decimals). Models the
rows name that no published config gives, or whose architecture the spec cannot state, are refused with the reason."""

import pytest

from tokspeed.calibration.answered import why_unanswered
from tokspeed.calibration.rows import REPO_CSV3, load_rows
from tokspeed.errors import UserError
from tokspeed.models.catalog import get_model, left_out, resolve_id
from tokspeed.models.hf_config import spec_from_hf_config

GIB = 2 ** 30


def _llama_bench_gib(n_bytes: float) -> float:
    """llama-bench's size column: the model's tensor bytes in GiB, printed to two decimals."""
    return round(n_bytes / GIB, 2)


def _row_bytes(model: str) -> float:
    """The BF16 model_bytes the calibration rows of ``model`` state (one file, so one value)."""
    sizes = {r.model_bytes for r in load_rows(REPO_CSV3) if r.model == model and r.quant == "BF16"}
    assert len(sizes) == 1, sizes
    return sizes.pop()


def test_ministral_3_8b_by_hand():
    """Ministral3Config defaults: 34 layers of 4096, 32 query heads and 8 KV heads of 128, SwiGLU 14336, vocabulary
    131072, untied output (tie_word_embeddings False), RMSNorm weights only, no biases."""
    d, L, V, ff, hd = 4096, 34, 131072, 14336, 128
    attn = d * 32 * hd + 2 * d * 8 * hd + 32 * hd * d          # q, k, v, o
    mlp = 3 * d * ff                                            # gate, up, down
    total = L * (attn + mlp + 2 * d) + d + 2 * V * d            # + final norm, embedding and output matrices
    assert total == 8_489_553_920
    assert get_model("ministral-3-8b").n_params == total
    # the rows' file: Ministral-3-8B-Instruct-2512-BF16, llama-bench size 15.81 GiB (16,975,858,237 bytes)
    assert _row_bytes("ministral-3-8b") == 16_975_858_237
    assert _llama_bench_gib(2 * total) == _llama_bench_gib(_row_bytes("ministral-3-8b")) == 15.81
    # the printed size leaves 0.005 GiB either way: 2.7 M parameters, 0.03 % of the count
    assert abs(2 * total - _row_bytes("ministral-3-8b")) <= 0.005 * GIB


def test_qwen35_9b_by_hand():
    """Qwen3_5TextConfig defaults: 32 layers of 4096; full_attention_interval 4 -> 8 gated full-attention layers
    (modeling_qwen3_5.py Qwen3_5Attention: q_proj emits queries and the output gate, 16 heads / 4 KV heads of 256,
    q_norm and k_norm over the head) and 24 Gated DeltaNet layers (Qwen3_5GatedDeltaNet: in_proj_qkv, in_proj_z,
    in_proj_b, in_proj_a, a bias-free depthwise conv1d of kernel 4 over q, k, v, dt_bias and A_log per value head,
    a gated RMSNorm over the value head dim, out_proj); SwiGLU 12288 on every layer; vocabulary 248320, untied."""
    d, V, ff = 4096, 248320, 12288
    attn = d * 16 * 256 * 2 + 2 * d * 4 * 256 + 16 * 256 * d + 2 * 256
    key, value = 16 * 128, 32 * 128
    conv = (2 * key + value) * 4
    delta = d * (2 * key + value) + d * value + 2 * d * 32 + conv + 2 * 32 + 128 + value * d
    total = 8 * attn + 24 * delta + 32 * (3 * d * ff + 2 * d) + d + 2 * V * d
    assert total == 8_953_803_264
    m = get_model("qwen3.5-9b")
    assert m.n_params == total and (m.n_attn_layers, m.n_linear_layers) == (8, 24)
    assert [i for i in range(32) if not m.is_linear_layer(i)] == [3, 7, 11, 15, 19, 23, 27, 31]
    # the rows' file: Qwen3.5-9B-BF16, llama-bench size 16.68 GiB (17,910,013,624 bytes); llama.cpp leaves the
    # checkpoint's MTP layer out of the GGUF, as the count does
    assert _row_bytes("qwen3.5-9b") == 17_910_013_624
    assert _llama_bench_gib(2 * total) == _llama_bench_gib(_row_bytes("qwen3.5-9b")) == 16.68
    assert abs(2 * total - _row_bytes("qwen3.5-9b")) <= 0.005 * GIB
    # without the attention's output gate the file would be 8 x 16.8 M parameters (0.25 GiB) smaller: the size tells
    assert _llama_bench_gib(2 * (total - 8 * d * 16 * 256)) != 16.68


def test_qwen35_9b_state_and_kv_by_hand():
    """Per sequence: 8 attention layers cache K and V (4 heads of 256 each); 24 linear layers keep the conv's last 3
    inputs over q, k, v and a 32 x 128 x 128 recurrent state, whatever the context."""
    m = get_model("qwen3.5-9b")
    assert m.kv_elements_per_token_layer * m.n_attn_layers == 8 * 2 * 4 * 256 == 16_384
    assert m.state_elements_per_layer == 3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128 == 548_864


# the class defaults as a config.json writes them (the multimodal wrapper with its text_config): the shape fields
# and layer pattern only; rope and window are not the class defaults' (qwen3.5-9b's notes)
MINISTRAL3_DEFAULTS = {"model_type": "mistral3", "text_config": {
    "model_type": "ministral3", "vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 34, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "tie_word_embeddings": False, "sliding_window": None}}
QWEN3_5_DEFAULTS = {"model_type": "qwen3_5", "tie_word_embeddings": False, "text_config": {
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
    "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "partial_rotary_factor": 0.25, "tie_word_embeddings": False,
    "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(32)]}}
SHAPE = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size", "tied_embeddings",
         "sliding_window", "qk_norm", "attn_output_gate", "rotary_dim", "n_linear_layers", "linear_k_heads",
         "linear_k_dim", "linear_v_heads", "linear_v_dim", "linear_conv_kernel", "family")


@pytest.mark.parametrize("cfg, mid", [(MINISTRAL3_DEFAULTS, "ministral-3-8b"), (QWEN3_5_DEFAULTS, "qwen3.5-9b")])
def test_the_defaults_as_a_config_json_read_as_the_entry(cfg, mid):
    read, entry = spec_from_hf_config(cfg), get_model(mid)
    assert [getattr(read, f) for f in SHAPE] == [getattr(entry, f) for f in SHAPE]
    assert read.n_params == entry.n_params


@pytest.mark.parametrize("name, mid", [
    ("ministral-3:8b", "ministral-3-8b"), ("mistralai/Ministral-3-8B-Instruct-2512", "ministral-3-8b"),
    ("mistralai/Ministral-3-8B-Base-2512", "ministral-3-8b"), ("Ministral-3-8B-Instruct-2512", "ministral-3-8b"),
    ("qwen3.5:9b", "qwen3.5-9b"), ("Qwen/Qwen3.5-9B", "qwen3.5-9b"), ("unsloth/Qwen3.5-9B-GGUF", None),
    ("ministral-8b", "ministral-8b"),    # the 2410 model stays its own entry
])
def test_names_people_type_resolve(name, mid):
    assert resolve_id(name) == mid


def test_another_release_date_is_not_taken_for_it():
    assert resolve_id("mistralai/Ministral-3-8B-Instruct-2603") is None


@pytest.mark.parametrize("model", ["ministral-3-8b", "qwen3.5-9b"])
def test_the_rows_naming_them_are_answered(model):
    """The 6 rows of each (Intel Arc Pro B70, llama.cpp SYCL and Vulkan, BF16) are now predicted."""
    rows = [r for r in load_rows(REPO_CSV3) if r.model == model]
    assert len(rows) == 6
    assert [why_unanswered(r) for r in rows] == [None] * 6


@pytest.mark.parametrize("name, kind, first", [
    ("gemma-3n-e2b", "unsourced", "no published config"),      # E4B is an entry (test_models_gemma3n.py)
    ("gemma3n:e2b", "unsourced", "no published config"),
    ("gemma-4-12b", "unsourced", "no published config"),
    ("gemma4:12b", "unsourced", "no published config"),
])
def test_models_the_rows_name_without_a_source_say_why(name, kind, first):
    why = left_out(name)
    assert why["kind"] == kind and why["reason"].startswith(first)
    with pytest.raises(UserError) as e:
        get_model(name)
    assert f"not in the catalog: {why['reason']}" in str(e.value)
    if kind == "unsourced":       # its own config.json or GGUF file predicts it
        assert "config.json or GGUF file" in str(e.value)


def test_the_rows_of_unsourced_models_stay_unanswered_with_the_reason():
    rows = [r for r in load_rows(REPO_CSV3) if r.model == "gemma-4-12b"]
    assert len(rows) == 14
    assert {why_unanswered(r)[0] for r in rows} == {"model"}
