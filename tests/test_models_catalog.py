"""Every catalog entry loads, validates and matches the parameter count its authors publish;
a few components are checked against sums done by hand."""

import json
import re
import tomllib
from pathlib import Path

import pytest

from tokspeed.errors import UserError
from tokspeed.models import ModelSpec
from tokspeed.models.catalog import DATA, get_model, model_ids, resolve_id
from tokspeed.models.hf_config import spec_from_hf_config

IDS = model_ids()
RECORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "model-configs" / "models.jsonl"
RECORDS = {r["name"]: r for r in map(json.loads, RECORDS_FILE.read_text().splitlines())}
FROM_RECORDS = [mid for mid in IDS if tomllib.loads((DATA / f"{mid}.toml").read_text()).get("record")]

# The brief's required ids (the calibration file uses a subset of them).
REQUIRED = """llama-1-7b llama-1-13b llama-1-30b llama-1-65b llama-2-7b llama-2-13b llama-2-70b llama-3-8b
llama-3-70b llama-3.1-8b llama-3.1-70b llama-3.1-405b llama-3.2-1b llama-3.2-3b mistral-7b mixtral-8x7b
mixtral-8x22b qwen2.5-0.5b qwen2.5-1.5b qwen2.5-7b qwen2.5-14b qwen2.5-32b qwen2.5-72b qwen2.5-coder-7b
qwen3-8b qwen3-32b qwen3-30b-a3b qwen3-235b-a22b qwen3-coder-30b-a3b gemma-2-9b gemma-2-27b gemma-3-4b
gemma-3-27b phi-2 phi-3-mini codellama-7b codellama-13b codellama-34b deepseek-v3 gpt-oss-20b gpt-oss-120b
gpt-j-6b smollm2-135m smollm2-360m smollm2-1.7b tinyllama-1.1b""".split()

# Active counts stated to two significant figures and truncated by their authors: the tolerance is one
# unit of the last stated digit. Qwen3-30B-A3B "3.3B activated" (exact 3.35 B), Qwen3-235B-A22B "22B"
# (exact 22.19 B), DeepSeek-V3 "37B" (exact 37.55 B with both embedding tables, 36.63 B without the input one).
COARSE_ACTIVE_B = {"qwen3-30b-a3b": 0.1, "qwen3-coder-30b-a3b": 0.1, "qwen3-235b-a22b": 1.0, "deepseek-v3": 1.0}


def test_required_ids_present():
    assert not set(REQUIRED) - set(IDS)


@pytest.mark.parametrize("mid", IDS)
def test_entry_loads_with_provenance(mid):
    raw = tomllib.loads((DATA / f"{mid}.toml").read_text())
    assert raw["id"] == mid
    for key in ("name", "family", "source", "published_params", "max_context"):
        assert raw.get(key), f"{mid} lacks {key}"
    if raw.get("record"):      # made from a model-configs record: its source URL and how sure it is
        assert raw["source"].startswith("https://") and raw.get("source_status") and raw.get("hf_repo")
    elif raw["source"].endswith(".gguf"):   # a GGUF's own metadata (Falcon 7B: llama.cpp's vocab-only file)
        assert raw["source"].startswith("https://github.com/ggml-org/llama.cpp/") and raw.get("hf_repo")
    elif raw["source"].startswith("https://pypi.org/project/transformers/"):   # a configuration class's defaults:
        # the status names the release, the file inside its wheel and the checkpoint the defaults are documented as
        version = raw["source"].rstrip("/").rsplit("/", 1)[1]
        assert raw["source_status"].startswith(f"framework defaults (transformers {version}, PyPI wheel")
        assert "/configuration_" in raw["source_status"] and "documented" in raw["source_status"]
    else:
        assert raw["source"].startswith("https://huggingface.co/") and raw["source"].endswith("config.json")
    m = get_model(mid)
    assert m.id == mid
    assert m.n_active_params <= m.n_params
    if m.is_moe:
        assert m.published_active_params > 0, "an MoE entry states its active parameters"


def test_glm_windows_are_their_own_not_the_default():
    """An entry without max_context fell back to ModelSpec's 4,096 and refused GLM-4.5-Air at 8K (its card:
    128K context; GLM-4-0414: 32K)."""
    assert get_model("glm-4.5-air").max_context == 128 * 1024
    assert get_model("glm-4-9b").max_context == 32 * 1024


@pytest.mark.parametrize("mid", IDS)
def test_params_match_published(mid):
    m = get_model(mid)
    total_b = (m.n_params + m.vision_params) / 1e9   # the published figure is the whole checkpoint
    if m.published_params_effective:                 # Gemma 3n's "E4B": without the per-layer input parameters
        total_b -= m.param_counts()["per_layer_inputs"] / 1e9
    # a figure stated coarsely ("12B") is matched to one unit of its last digit (truncated), or half of it where
    # the authors' figures round (0.5: GLM's and DeepSeek's A-figures), never looser than 1/5
    for tol, pub in ((m.published_params_tol, m.published_params), (m.published_active_tol, m.published_active_params)):
        assert tol in (0.0, 0.01, 0.1, 0.5, 1.0, 10.0) and tol <= pub / 5
    assert abs(total_b - m.published_params) <= max(0.005 * m.published_params, m.published_params_tol)
    if m.published_active_params:
        active = m.n_active_params
        if m.published_active_excludes_embedding:
            active -= m.param_counts()["embedding"]
        if m.published_active_excludes_output:
            assert m.published_active_excludes_embedding
            active -= m.param_counts()["lm_head"]
        tol = max(0.005 * m.published_active_params, COARSE_ACTIVE_B.get(mid, 0.0), m.published_active_tol)
        assert abs(active / 1e9 - m.published_active_params) <= tol


def test_catalog_size():
    assert len(IDS) >= 90 and len(FROM_RECORDS) >= 41


# record field -> ModelSpec attribute (the shape facts every record carries)
_SHAPE = {"num_hidden_layers": "n_layers", "hidden_size": "d_model", "num_attention_heads": "n_heads",
          "vocab_size": "vocab_size"}


@pytest.mark.parametrize("mid", FROM_RECORDS)
def test_entry_matches_its_record(mid):
    """An entry made from a model-configs record has the record's shape, source and status."""
    m = get_model(mid)
    r = RECORDS[m.record]
    import re

    url = re.search(r"https://\S+", r["source_url"] or "")
    if url:   # the record's own source (the two base-shape records without one point at their base's)
        assert m.source in r["source_url"] or m.record.startswith(("DeepSeek-R1-Distill-Llama-70B", "DeepSeek-Coder"))
    hyb = r.get("hybrid") or {}
    if hyb.get("mamba2_layers"):   # Mamba-2 hybrid (Granite 4.0-H, Nemotron-H): layer counts, state, conv, d_inner
        assert (m.linear_kind, m.n_linear_layers, m.n_attn_layers) == ("mamba2", hyb["mamba2_layers"], hyb["attention_layers"])
        assert (m.linear_k_dim, m.linear_conv_kernel) == (hyb.get("mamba_d_state") or hyb["ssm_state_size"],
                                                          hyb.get("mamba_d_conv") or hyb["conv_kernel"])
        if "mamba_num_heads" in hyb:
            assert (m.linear_v_heads, m.linear_v_dim, m.linear_k_heads) == (
                hyb["mamba_num_heads"], hyb["mamba_head_dim"], hyb["n_groups"])
        else:
            assert m.linear_value_dim == hyb["mamba_expand"] * r["hidden_size"]
    elif hyb:
        assert (m.linear_k_heads, m.linear_k_dim, m.linear_v_heads, m.linear_v_dim, m.linear_conv_kernel) == (
            hyb["linear_num_key_heads"], hyb["linear_key_head_dim"], hyb["linear_num_value_heads"],
            hyb["linear_value_head_dim"], hyb["linear_conv_kernel_dim"])
        assert m.n_attn_layers == m.n_layers // hyb["full_attention_interval"]
    assert m.source_status == r["status"]
    assert m.hf_repo in r["hf_repo"]
    for key, attr in _SHAPE.items():
        if r[key] is not None and not (key == "num_hidden_layers" and "moe_layers" in hyb):
            assert getattr(m, attr) == r[key], key
    if "moe_layers" in hyb:   # Nemotron-H: each mixer block and the FFN block after it make one layer
        assert m.n_layers == hyb["mamba2_layers"] + hyb["attention_layers"]
        assert m.n_layers - m.n_ffn_free_layers == hyb["moe_layers"] + hyb["mlp_layers"]
        assert m.n_moe_layers == hyb["moe_layers"]
    assert m.n_kv_heads == (r["num_key_value_heads"] or r["num_attention_heads"])
    if r["mla"]:   # MLA: head_dim is qk_nope + qk_rope
        assert m.head_dim == r["mla"]["qk_nope_head_dim"] + r["mla"]["qk_rope_head_dim"]
    else:
        assert m.head_dim == (r["head_dim"] or r["hidden_size"] // r["num_attention_heads"])
    moe = r["moe"] or {}
    n_exp = moe.get("num_local_experts") or moe.get("num_experts") or moe.get("n_routed_experts") or 0
    assert m.n_experts == n_exp
    if n_exp:
        assert m.n_active_experts == (moe.get("num_experts_per_tok") or moe["top_k_experts"])
        assert m.d_ff_expert == (moe.get("moe_intermediate_size") or moe.get("expert_intermediate_size"))
    elif r["intermediate_size"]:
        assert m.d_ff == r["intermediate_size"]
    if r.get("global_head_dim"):   # Gemma 4: the full-attention layers' own head shape
        assert (m.global_head_dim, m.global_kv_heads) == (r["global_head_dim"], r["num_global_key_value_heads"])
    if r["mla"]:
        assert (m.kv_lora_rank, m.q_lora_rank or None) == (r["mla"]["kv_lora_rank"], r["mla"]["q_lora_rank"])
    if r["tie_word_embeddings"] is not None:
        assert m.tied_embeddings == r["tie_word_embeddings"]


def test_ollama_and_hf_aliases():
    assert resolve_id("llama3.3:70b") == "llama-3.3-70b"
    assert resolve_id("deepseek-r1:32b") == "deepseek-r1-distill-qwen-32b"
    assert resolve_id("meta-llama/Llama-3.3-70B-Instruct") == "llama-3.3-70b"
    assert resolve_id("Qwen/QwQ-32B") == "qwq-32b"
    assert "reasoning" in get_model("deepseek-r1:8b").use and "code" in get_model("codestral").use


def test_aliases_unique_and_resolve():
    seen = {}
    for mid in IDS:
        for a in tomllib.loads((DATA / f"{mid}.toml").read_text()).get("aliases", []):
            assert a.lower() not in IDS, f"alias {a} shadows an id"
            assert a.lower() not in seen, f"alias {a} used by {seen.get(a.lower())} and {mid}"
            seen[a.lower()] = mid
            assert resolve_id(a.upper()) == mid


@pytest.mark.parametrize("name, mid", [
    ("meta-llama/Llama-2-7b-hf", "llama-2-7b"), ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
    ("Llama 2 7B", "llama-2-7b"), ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Llama-3.3-70B-Instruct", "llama-3.3-70b"), ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("gpt-oss 20B", "gpt-oss-20b"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"), ("google/gemma-2-9b-it", "gemma-2-9b"),
    ("someone/llama-3.1-8b-pruned", None), ("foo/bar", None),       # another suffix may change the shapes: no match
    # a packaged repo is read from its files (its weights are another format), not taken for the catalog model
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", None), ("unsloth/Qwen3-30B-A3B-GGUF", None),
])
def test_repo_ids_and_table_spellings_resolve(name, mid):
    """A repo id or a benchmark table's spelling: the org, a "Meta-" prefix and a fine-tune's suffixes (instruct,
    chat, it, hf: the shapes are kept) do not change the model."""
    assert resolve_id(name) == mid


def test_a_row_states_the_format_apart_so_packaging_may_go():
    assert resolve_id("Qwen/Qwen2.5-7B-Instruct-AWQ", packaging=True) == "qwen2.5-7b"
    assert resolve_id("unsloth/Qwen3-30B-A3B-GGUF", packaging=True) == "qwen3-30b-a3b"


def test_unknown_model_suggests():
    with pytest.raises(UserError, match="did you mean"):
        get_model("llama-3-8")


# ---- components by hand ---------------------------------------------------------------------

def test_llama3_8b_components_by_hand():
    m = get_model("llama-3-8b")
    assert m.attention_params_per_layer() == 4096 * 4096 * 2 + 4096 * 1024 * 2
    assert m.mlp_params(m.d_ff) == 3 * 4096 * 14336
    c = m.param_counts()
    assert c["embedding"] == c["lm_head"] == 128256 * 4096
    assert c["norms"] == (2 * 32 + 1) * 4096
    assert m.n_params == 8_030_261_248        # HF safetensors total
    assert m.kv_elements_per_token_layer == 2 * 8 * 128
    # the seed article: 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 B per token in FP16
    assert m.kv_elements_per_token_layer * m.n_layers * 2 == 131_072


def test_deepseek_v3_mla_by_hand():
    m = get_model("deepseek-v3")
    assert m.kv_elements_per_token_layer == 512 + 64
    q = 7168 * 1536 + 1536 + 1536 * 128 * (128 + 64)     # q_a, q_a_norm, q_b
    kv = 7168 * (512 + 64) + 512 + 512 * 128 * (128 + 128)  # kv_a (+rope key), kv_a_norm, kv_b
    o = 128 * 128 * 7168
    assert m.attention_params_per_layer() == q + kv + o == 187_107_328
    expert = 3 * 7168 * 2048
    assert m.param_counts()["moe_experts"] == 58 * 256 * expert
    assert m.param_counts()["moe_shared"] == 58 * expert
    assert m.param_counts()["ffn_dense"] == 3 * 3 * 7168 * 18432
    assert m.n_params - m.n_active_params == 58 * (256 - 8) * expert


def test_mixtral_active_by_hand():
    m = get_model("mixtral-8x7b")
    expert = 3 * 4096 * 14336
    assert m.n_params - m.n_active_params == 32 * 6 * expert
    assert m.param_counts()["router"] == 32 * 4096 * 8


def test_gpt_oss_biases_and_sinks_by_hand():
    m = get_model("gpt-oss-120b")
    attn = (2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64
    assert m.attention_params_per_layer() == attn
    assert m.expert_params() == 2880 * 2 * 2880 + 2 * 2880 + 2880 * 2880 + 2880
    assert m.router_params() == 2880 * 128 + 128
    # model card Table 1: MLP (experts + router) 114.71 B, embedding + unembedding 1.16 B
    assert (m.param_counts()["moe_experts"] + m.param_counts()["router"]) / 1e9 == pytest.approx(114.71, abs=0.005)
    assert (m.param_counts()["embedding"] + m.param_counts()["lm_head"]) / 1e9 == pytest.approx(1.16, abs=0.005)


def test_parallel_block_models_by_hand():
    j = get_model("gpt-j-6b")
    assert j.attention_params_per_layer() == 4 * 4096 * 4096          # no attention biases
    assert j.mlp_params(j.d_ff) == 2 * 4096 * 16384 + 16384 + 4096     # fc_in, fc_out + biases
    assert j.param_counts()["norms"] == 29 * 2 * 4096                  # ln_1 per layer + ln_f, with bias
    assert j.param_counts()["lm_head"] == 50400 * 4096 + 50400
    p = get_model("phi-2")
    assert p.attention_params_per_layer() == 4 * (2560 * 2560 + 2560)
    assert p.n_params == 2_779_683_840


def test_gemma3_4b_vision_tower_by_hand():
    m = get_model("gemma-3-4b")
    w, ff, patches = 1152, 4304, (896 // 14) ** 2
    tower = (3 * 14 * 14 * w + w) + patches * w + 27 * (4 * (w * w + w) + 2 * w * ff + ff + w + 4 * w) + 2 * w
    assert tower == 416_866_032
    assert m.vision_params == tower + w * 2560 + w
    assert m.n_params + m.vision_params == 4_300_079_472


def test_sliding_window_kv():
    g = get_model("gemma-2-9b")   # every other layer a 4096-token window
    assert g.kv_cached_tokens(8192) == 21 * 8192 + 21 * 4096
    o = get_model("gpt-oss-20b")  # 12 full layers, 12 of 128 tokens
    assert o.kv_cached_tokens(10_000) == 12 * 10_000 + 12 * 128
    assert get_model("gemma-3-27b").n_sliding_layers == 62 - 62 // 6


def test_spec_rejects_bad_values():
    with pytest.raises(UserError, match="vision_params"):
        ModelSpec(id="x", n_layers=1, d_model=8, n_heads=2, n_kv_heads=2, d_ff=8, vocab_size=4, vision_params=-1)
    with pytest.raises(UserError, match="unknown field"):
        ModelSpec.from_dict({"id": "x", "n_layers": 1, "hidden": 3})


def test_docs_list_every_model():
    """docs/models.md's table (python -m tokspeed.models.doc_table) names every catalog entry."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text()
    table = doc.split("<!-- catalog-table:start -->")[1].split("<!-- catalog-table:end -->")[0]
    assert {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")} == set(IDS)


# the record configs copied with the records (data/model-configs/configs) -> the entry made from them
RECORD_CONFIGS = {
    "codestral-22b-v0.1": "codestral-22b", "deepseek-v2-lite": "deepseek-v2-lite",
    "exaone-3.5-32b-instruct": "exaone-3.5-32b", "gemma-2-2b": "gemma-2-2b", "internlm2.5-7b": "internlm2.5-7b",
    "llama-3.2-1b": "llama-3.2-1b", "llama-3.2-3b": "llama-3.2-3b", "llama-3.3-70b-instruct": "llama-3.3-70b",
    "llama-4-scout-17b-16e": "llama-4-scout-17b-16e", "ministral-8b-instruct-2410": "ministral-8b",
    "mistral-large-instruct-2407": "mistral-large-2407", "mistral-nemo-instruct-2407": "mistral-nemo-12b",
    "olmo-2-13b": "olmo-2-13b", "olmo-2-7b": "olmo-2-7b", "phi-3.5-mini": "phi-3.5-mini", "phi-4-mini": "phi-4-mini",
    "phi-4": "phi-4", "qwen2.5-3b": "qwen2.5-3b", "qwen3-0.6b": "qwen3-0.6b", "qwen3-1.7b": "qwen3-1.7b",
    "solar-10.7b-instruct-v1.0": "solar-10.7b",
    "deepseek-v3.1": "deepseek-v3.1", "gemma-3-1b": "gemma-3-1b", "llama-3.1-8b": "llama-3.1-8b",
    "llama-3.1-70b": "llama-3.1-70b", "llama-3.1-405b": "llama-3.1-405b", "mixtral-8x7b": "mixtral-8x7b",
    "qwen2.5-7b": "qwen2.5-7b", "qwen2.5-14b": "qwen2.5-14b", "qwen2.5-32b": "qwen2.5-32b", "qwen2.5-72b": "qwen2.5-72b",
    "qwen3-8b": "qwen3-8b", "qwen3-32b": "qwen3-32b", "qwen3-30b-a3b": "qwen3-30b-a3b", "qwen3-235b-a22b": "qwen3-235b-a22b",
    "qwen3.5-27b": "qwen3.5-27b", "qwen3.5-35b-a3b": "qwen3.5-35b-a3b", "qwen3.5-122b-a10b": "qwen3.5-122b-a10b",
    "qwen3.5-397b-a17b": "qwen3.5-397b-a17b", "qwen3.6-27b": "qwen3.6-27b", "qwen3.6-35b-a3b": "qwen3.6-35b-a3b",
    "qwen3-vl-8b-instruct": "qwen3-vl-8b", "seed-oss-36b": "seed-oss-36b",
    "gemma-4-31b": "gemma-4-31b", "gemma-4-26b-a4b": "gemma-4-26b-a4b",
    "deepseek-v3.2": "deepseek-v3.2", "glm-5": "glm-5", "glm-5.1": "glm-5.1",
}
# the other configs kept with the records: why reading one does not give a catalog entry exactly
CONFIGS_NOT_AN_ENTRY = {
    "mixtral-8x22b": "base v0.1 vocabulary 32000; the entry has 32768 (the record notes the Instruct's)",
    **{c: "not in the catalog (docs/models.md, Records left out)" for c in (
        "deepseek-v4-flash", "deepseek-v4-pro", "glm-5.2",
        "kimi-k2.5", "kimi-k2.6", "kimi-k3", "lfm2-350m", "llama-3.3-nemotron-super-49b-v1", "minimax-m2.5", "minimax-m2.7",
        "minimax-m3", "ministral-3-3b-2512", "nemotron-3-super-120b-a12b", "nemotron-3-ultra-550b-a55b")},
    **{c: "no nemotron_h reader (the entry is written by hand from the record: n_ffn_free_layers)" for c in (
        "nemotron-3-nano-30b-a3b", "nemotron-h-56b-base-8k")},
}


@pytest.mark.parametrize("config, mid", sorted(RECORD_CONFIGS.items()))
def test_record_config_reads_as_the_entry(config, mid):
    """Reading the full config.json kept with a record gives the catalog entry's counts and KV."""
    cfg = json.loads((RECORDS_FILE.parent / "configs" / f"{config}.json").read_text())
    spec, ref = spec_from_hf_config(cfg, id=mid), get_model(mid)
    assert (spec.n_params, spec.n_active_params, spec.vision_params) == (ref.n_params, ref.n_active_params, ref.vision_params)
    assert spec.kv_elements_per_token_layer == ref.kv_elements_per_token_layer
    assert spec.kv_cached_tokens(100_000) == ref.kv_cached_tokens(100_000)
    assert spec.kv_cached_elements(100_000) == ref.kv_cached_elements(100_000)
    assert (spec.n_linear_layers, spec.state_elements_per_layer) == (ref.n_linear_layers, ref.state_elements_per_layer)
    assert sorted(p.stem for p in (RECORDS_FILE.parent / "configs").glob("*.json")) == sorted(RECORD_CONFIGS | CONFIGS_NOT_AN_ENTRY)


# configs of records left out for an attention or block kind tokspeed does not model -> the field it names
REFUSED_CONFIGS = {
    "glm-5.2": "indexer_types shared",
    "deepseek-v4-flash": "index_topk", "deepseek-v4-pro": "index_topk", "minimax-m3": "first_k_dense_replace", "kimi-k3": "kv_lora_rank",
    "nemotron-3-nano-30b-a3b": "hybrid_override_pattern", "nemotron-3-super-120b-a12b": "hybrid_override_pattern",
    "nemotron-3-ultra-550b-a55b": "layers_block_type", "nemotron-h-56b-base-8k": "hybrid_override_pattern",
    "llama-3.3-nemotron-super-49b-v1": "block_configs", "lfm2-350m": "layer_types conv",
}


@pytest.mark.parametrize("config, field", sorted(REFUSED_CONFIGS.items()))
def test_left_out_architectures_are_refused_naming_the_field(config, field):
    """A config read as plain attention would give a wrong KV cache (Gemma 4, before global_head_dim was modelled:
    its full-attention layers have head_dim 512, 2-4 KV heads and K = V); DeepSeek V4 and Nemotron NAS were refused for a missing field, not for what they are."""
    cfg = json.loads((RECORDS_FILE.parent / "configs" / f"{config}.json").read_text())
    with pytest.raises(UserError, match=f"{field}.* not modelled"):
        spec_from_hf_config(cfg)
    assert config in CONFIGS_NOT_AN_ENTRY


def test_nemotron_h_mixer_only_layers_by_hand():
    """Nemotron 3 Nano: 23 Mamba-2 + 6 attention blocks, 23 MoE blocks, one RMSNorm per block (52) + the final one;
    the 6 Mamba blocks right before an attention block have no FFN (n_ffn_free_layers)."""
    from tokspeed.models.tensors import weight_tensors

    m, d = get_model("nemotron-3-nano-30b-a3b"), 2688
    d_inner, bc = 64 * 64, 2 * 8 * 128                       # heads x head dim; B and C (groups x d_state)
    mamba = d * (2 * d_inner + bc + 64) + (d_inner + bc) * (4 + 1) + 3 * 64 + d_inner + d_inner * d
    attn = d * 32 * 128 + 2 * d * 2 * 128 + 32 * 128 * d
    expert, shared, router = 2 * d * 1856, 2 * d * 3712, d * 128 + 128   # relu2: up and down only
    total = 23 * mamba + 6 * attn + 23 * (128 * expert + shared + router) + 53 * d + 2 * 131072 * d
    assert m.n_params == total
    assert m.n_active_params == total - 23 * (128 - 6) * expert
    assert sum(rows * cols for _, _, rows, cols in weight_tensors(m)) == total
    assert [m.has_ffn(i) for i in range(29)] == [True] * 23 + [False] * 6


def test_qwen35_hybrid_and_vision_by_hand():
    """Qwen3.5-27B: 16 of 64 layers attend (GQA 24/4, head_dim 256), 48 Gated DeltaNet layers keep a fixed state;
    the checkpoint's ViT (config vision_config: 27 blocks of 1152 / 4304, patch 16, temporal 2, 2304 positions,
    merger to 5120) is counted in vision_params."""
    m = get_model("qwen3.5-27b")
    assert (m.n_attn_layers, m.n_linear_layers) == (16, 48)
    assert m.kv_elements_per_token_layer * m.n_attn_layers * 2 == 16 * 2 * 4 * 256 * 2 == 65_536   # f16 bytes / token
    assert m.state_elements_per_layer == 3 * (2 * 16 * 128 + 48 * 128) + 48 * 128 * 128
    w, ff = 1152, 4304
    block = 4 * w + (3 * w * w + 3 * w) + (w * w + w) + (w * ff + ff) + (ff * w + w)
    merger = 2 * w + (4 * w) ** 2 + 4 * w + 4 * w * 5120 + 5120
    assert m.vision_params == 3 * 2 * 16 * 16 * w + w + 2304 * w + 27 * block + merger
    vl = get_model("qwen3-vl-8b")      # the same tower with a 4096 merger and 3 deepstack mergers (LayerNorm over 4608)
    deep = 2 * 4 * w + (4 * w) ** 2 + 4 * w + 4 * w * 4096 + 4096
    assert vl.vision_params == 3 * 2 * 16 * 16 * w + w + 2304 * w + 27 * block + merger - 4 * w * 1024 - 1024 + 3 * deep


def test_2026_names_resolve():
    for name, mid in [("Qwen/Qwen3.5-35B-A3B", "qwen3.5-35b-a3b"), ("qwen3.6:27b", "qwen3.6-27b"),
                      ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b-2507"), ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3.1"),
                      ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nemotron-3-nano-30b-a3b"),
                      ("NVIDIA-Nemotron-3-Nano-30B-A3B", "nemotron-3-nano-30b-a3b"), ("granite4:small-h", "granite-4.0-h-small"),
                      ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl-8b")]:
        assert resolve_id(name) == mid
    assert resolve_id("unsloth/Qwen3.5-27B-GGUF", packaging=True) == "qwen3.5-27b"


def test_glm_47_flash_total_is_llama_benchs_count():
    """GLM-4.7-Flash, by hand from its record (the DeepSeek-V3 layout): llama-bench counts 29.94 B parameters in
    ggml-org/GLM-4.7-Flash-GGUF (llama.cpp benches/mac-m2-ultra.md) and the Q8_0 file is 29.65 GiB."""
    m, d, v = get_model("glm-4.7-flash"), 2048, 154880
    attn = (d * 768 + 768 + 768 * 20 * 256                          # q_a (+ its norm), q_b: 20 heads x (192 + 64)
            + d * (512 + 64) + 512 + 512 * 20 * (192 + 256)         # kv_a with the rope key (+ norm), kv_b
            + 20 * 256 * d)                                         # o from 20 x v 256
    expert = 3 * d * 1536
    moe = 64 * expert + expert + d * 64 + 64                        # routed, shared, router + its bias
    total = 47 * attn + 3 * d * 10240 + 46 * moe + (2 * 47 + 1) * d + 2 * v * d
    assert m.n_params == total
    assert round(total / 1e9, 2) == 29.94
    assert abs(total * 34 / 32 / 2**30 - 29.65) / 29.65 < 0.002    # Q8_0: 34 bytes per 32 weights
    active = total - 46 * 60 * expert                               # 4 of 64 routed experts run
    assert m.n_active_params == active
    assert round((active - 2 * v * d) / 1e9) == 3                   # the name's A3B without both tables


# GLM's A-figures ("106B-A12B", "30B-A3B", "40B active") and the count without both embedding tables, by model
GLM_ACTIVE_B = {"glm-4.5-air": (12, 12.18), "glm-4.7-flash": (3, 3.26), "glm-5": (40, 39.88)}


@pytest.mark.parametrize("mid", sorted(GLM_ACTIVE_B))
def test_glm_counts_active_without_both_embedding_tables(mid):
    """Three GLM releases' stated active figures are each the count without the input table and the output head,
    rounded to whole billions; with either table in they are off by 0.3-1.9 B."""
    m = get_model(mid)
    stated, bare = GLM_ACTIVE_B[mid]
    tables = 2 * m.vocab_size * m.d_model
    assert round((m.n_active_params - tables) / 1e9, 2) == bare
    assert round(bare) == stated != round((m.n_active_params - tables / 2) / 1e9)


def test_falcon_7b_by_hand_from_its_gguf_metadata():
    """llama.cpp's models/ggml-vocab-falcon.gguf (converted from tiiuae/falcon-7b): 32 blocks of 4544, FFN 18176,
    71 query heads of 64 and one K/V head, 65,024 tokens; one LayerNorm (weight + bias) per block, no linear biases,
    the output matrix tied to the embedding."""
    m, d = get_model("falcon-7b"), 4544
    block = d * (71 * 64 + 2 * 64) + 71 * 64 * d + 2 * d * 18176 + 2 * d
    assert m.n_params == 32 * block + 2 * d + 65024 * d == 6_921_720_704
    assert m.kv_elements_per_token_layer == 2 * 64                  # multi-query: one key and one value of 64


@pytest.mark.parametrize("name", ["gemma-4-12b", "qwen3.5-4b", "ministral-3-14b", "zzzz"])
def test_a_model_without_an_entry_says_how_to_predict_it_anyway(name):
    """Models people run that have no entry (no record, no published config read): one line saying it is not in the
    catalog and which inputs predict it anyway (a config.json, a GGUF file, a Hugging Face repository id), never a
    guessed shape."""
    with pytest.raises(UserError) as e:
        get_model(name)
    text = str(e.value)
    assert "\n" not in text and f"unknown model {name!r}: not in the catalog" in text
    assert all(w in text for w in ("config.json", "GGUF file", "Hugging Face repository id"))


LEFT = tomllib.loads((DATA.parent / "left_out.toml").read_text())["model"]


@pytest.mark.parametrize("name", sorted({i for m in LEFT for i in m["ids"]}))
def test_a_left_out_record_is_refused_with_its_reason(name):
    """A record left out of the catalog (docs/models.md) is named as such: an architecture the spec cannot state by the
    field, one whose figures could not be checked by the reason and the inputs that predict it anyway."""
    from tokspeed.models.catalog import left_out
    from tokspeed.models.unmodelled import COST_FIELDS

    why = left_out(name)
    assert resolve_id(name) is None and why is not None
    with pytest.raises(UserError) as e:
        get_model(name)
    text = str(e.value)
    assert "\n" not in text and f"not in the catalog: {why['reason']}" in text
    if why["kind"] == "architecture":
        assert why["reason"].split()[0] in {*COST_FIELDS, "layer_types", "indexer_types"} and "not modelled" in text
    else:
        assert why["kind"] in ("unverified", "unsourced") and "config.json" in text


def test_every_record_is_an_entry_an_alias_or_left_out_with_a_reason():
    """Each of the 126 records: a catalog entry's record, a repository a catalog entry answers to, a left-out record
    (left_out.toml), or a record without values ('not found': docs/models.md lists them)."""
    entries = {get_model(mid).record for mid in FROM_RECORDS}
    left = {name for m in LEFT for name in m["records"]}
    assert left <= set(RECORDS)
    unaccounted = []
    for name, r in RECORDS.items():
        repos = re.findall(r"[\w.-]+/[\w.-]+", r["hf_repo"] or "")
        if (name in entries or name in left or r["status"].startswith(("not found", "not retrieved"))
                or any(resolve_id(repo, packaging=True) for repo in repos) or r["num_hidden_layers"] is None):
            continue
        unaccounted.append(name)
    assert not unaccounted


@pytest.mark.parametrize("field, value, kind", [
    ("tied_embeddings", "false", "true or false"),     # bool("false") is True: the embeddings would be tied
    ("qkv_bias", "no", "true or false"),
    ("gated_mlp", 0, "true or false"),
    ("rope_theta", "5e5", "a finite number"),
    ("rope_theta", float("inf"), "a finite number"),
    ("family", 3, "text"),
])
def test_a_model_file_takes_flags_numbers_and_words_only_of_their_type(field, value, kind):
    raw = {**tomllib.loads((DATA / "llama-3-8b.toml").read_text()), "id": "m", field: value}
    raw.pop("aliases", None)
    with pytest.raises(UserError, match=f"model m: {field} must be {kind}, got"):
        ModelSpec.from_dict(raw)
