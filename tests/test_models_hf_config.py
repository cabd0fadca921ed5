"""spec_from_hf_config reads each family's config.json (fields as in the real repos, abridged
only of tokenizer/task keys) into the same architecture as the catalog entry built from it."""

import json

import pytest

from tokspeed.errors import UserError
from tokspeed.models.catalog import get_model
from tokspeed.models.hf_config import spec_from_hf_config, spec_from_path

_ALT = ["sliding_attention", "full_attention"]

CONFIGS = {
    "llama-3-8b": {  # meta-llama/Meta-Llama-3-8B
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
        "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
        "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 500000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 128256},
    "llama-3.2-1b": {  # meta-llama/Llama-3.2-1B
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "head_dim": 64, "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 128256},
    "mistral-7b": {  # mistralai/Mistral-7B-v0.1
        "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
        "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "sliding_window": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32000},
    "mistral-7b-v0.3": {  # mistralai/Mistral-7B-v0.3
        "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
        "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 32768},
    "mixtral-8x7b": {  # mistralai/Mixtral-8x7B-v0.1
        "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
        "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": False, "rms_norm_eps": 1e-05,
        "rope_theta": 1e6, "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False,
        "vocab_size": 32000},
    "qwen2.5-7b": {  # Qwen/Qwen2.5-7B
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
        "hidden_size": 3584, "intermediate_size": 18944, "max_position_embeddings": 131072,
        "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28,
        "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "use_mrope": False,
        "use_sliding_window": False, "vocab_size": 152064},
    "qwen1.5-moe-a2.7b": {  # Qwen/Qwen1.5-MoE-A2.7B
        "architectures": ["Qwen2MoeForCausalLM"], "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 5632, "max_position_embeddings": 8192, "max_window_layers": 21,
        "model_type": "qwen2_moe", "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": False,
        "use_sliding_window": False, "vocab_size": 151936, "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4, "num_experts": 60,
        "norm_topk_prob": False},
    "qwen3-8b": {  # Qwen/Qwen3-8B
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 12288, "max_position_embeddings": 40960,
        "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
        "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936},
    "qwen3-30b-a3b": {  # Qwen/Qwen3-30B-A3B
        "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "decoder_sparse_step": 1,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144,
        "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
        "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": True,
        "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
        "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
        "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936},
    "gemma-2-9b": {  # google/gemma-2-9b (no tie_word_embeddings key: Gemma2Config ties by default)
        "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attn_logit_softcapping": 50.0,
        "cache_implementation": "hybrid", "final_logit_softcapping": 30.0, "head_dim": 256,
        "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
        "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2",
        "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
        "sliding_window_size": 4096, "vocab_size": 256000},
    "gemma-3-1b": {  # google/gemma-3-1b-it
        "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attn_logit_softcapping": None,
        "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 1152, "intermediate_size": 6912, "max_position_embeddings": 32768,
        "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": None,
        "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6, "vocab_size": 262144},
    "gemma-3-4b": {  # google/gemma-3-4b-it: the text config relies on Gemma3TextConfig defaults
        "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
        "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02,
        "mm_tokens_per_image": 256, "model_type": "gemma3",
        "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                        "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                        "sliding_window": 1024},
        "torch_dtype": "bfloat16",
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16,
                          "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}},
    "phi-3-mini": {  # microsoft/Phi-3-mini-4k-instruct
        "architectures": ["Phi3ForCausalLM"], "attention_dropout": 0.0, "embd_pdrop": 0.0, "hidden_act": "silu",
        "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "phi3",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": False, "vocab_size": 32064},
    "phi-2": {  # microsoft/phi-2
        "architectures": ["PhiForCausalLM"], "hidden_act": "gelu_new", "hidden_size": 2560,
        "intermediate_size": 10240, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
        "model_type": "phi", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "partial_rotary_factor": 0.4, "qk_layernorm": False, "resid_pdrop": 0.1, "rope_scaling": None,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "vocab_size": 51200},
    "gpt-j-6b": {  # EleutherAI/gpt-j-6b
        "activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"], "layer_norm_epsilon": 1e-05,
        "model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_inner": None, "n_layer": 28, "n_positions": 2048,
        "rotary": True, "rotary_dim": 64, "scale_attn_weights": True, "tie_word_embeddings": False,
        "tokenizer_class": "GPT2Tokenizer", "vocab_size": 50400},
    "deepseek-v3": {  # deepseek-ai/DeepSeek-V3
        "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "first_k_dense_replace": 3,
        "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
        "max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
        "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True,
        "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
        "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                "weight_block_size": [128, 128]},
        "rms_norm_eps": 1e-06, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
        "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}, "rope_theta": 10000,
        "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_group": 4,
        "topk_method": "noaux_tc", "v_head_dim": 128, "vocab_size": 129280},
    "gpt-oss-20b": {  # openai/gpt-oss-20b
        "architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
        "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
        "initial_context_length": 4096, "intermediate_size": 2880, "layer_types": _ALT * 12,
        "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
        "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
        "quantization_config": {"quant_method": "mxfp4"}, "rms_norm_eps": 1e-05,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                         "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
        "rope_theta": 150000, "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": False,
        "vocab_size": 201088},
}

# Provenance differs between a catalog entry and a bare config; everything else must agree.
_PROVENANCE = {"id", "name", "source", "published_params", "published_active_params",
               "published_active_excludes_embedding", "published_active_excludes_output", "notes", "use", "hf_repo", "source_status", "record",
               "published_params_tol", "published_active_tol", "released_format_source"}


def _write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_every_family_covered():
    families = {c["model_type"] for c in CONFIGS.values()}
    assert families >= {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma2",
                        "gemma3_text", "gemma3", "phi3", "phi", "deepseek_v3", "gpt_oss", "gptj"}


@pytest.mark.parametrize("mid", list(CONFIGS))
def test_config_matches_catalog(mid, tmp_path):
    spec = spec_from_path(_write(tmp_path, CONFIGS[mid]))
    ref = get_model(mid)
    assert spec.n_params == ref.n_params
    assert spec.n_active_params == ref.n_active_params
    assert spec.kv_elements_per_token_layer == ref.kv_elements_per_token_layer
    a = {k: v for k, v in spec.to_dict().items() if k not in _PROVENANCE}
    b = {k: v for k, v in ref.to_dict().items() if k not in _PROVENANCE}
    assert a == b


def test_qwen3_moe_sibling_with_other_context(tmp_path):
    cfg = dict(CONFIGS["qwen3-30b-a3b"], max_position_embeddings=262144, rope_theta=10000000)
    spec = spec_from_hf_config(cfg)
    assert spec.n_params == get_model("qwen3-coder-30b-a3b").n_params
    assert spec.max_context == 262144


def test_folder_with_config(tmp_path):
    d = tmp_path / "Meta-Llama-3-8B"
    d.mkdir()
    _write(d, CONFIGS["llama-3-8b"])
    spec = spec_from_path(d)
    assert spec.id == "Meta-Llama-3-8B"
    assert spec.n_params == 8_030_261_248


def test_unknown_model_type_with_standard_fields():
    cfg = dict(CONFIGS["llama-3-8b"], model_type="some_new_llama")
    spec = spec_from_hf_config(cfg)
    assert spec.family == "some_new_llama"
    assert spec.n_params == 8_030_261_248


def test_unknown_model_type_with_experts():
    cfg = dict(CONFIGS["mixtral-8x7b"], model_type="my_moe")
    assert spec_from_hf_config(cfg).n_params == get_model("mixtral-8x7b").n_params


def test_missing_fields_named():
    cfg = {"model_type": "mystery", "hidden_size": 64, "num_hidden_layers": 2}
    with pytest.raises(UserError) as e:
        spec_from_hf_config(cfg)
    msg = str(e.value)
    assert "num_attention_heads" in msg and "vocab_size" in msg and "intermediate_size" in msg
    assert "hidden_size" not in msg.split("lacks")[1].split("(")[0]
    assert "\n" not in msg


@pytest.mark.parametrize("text, what", [
    ("{not json", "not valid JSON"),
    ("[1, 2, 3]", "expected a JSON object"),
    ('{"model_type": "llama"}', "lacks"),
    ('{"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2, "num_attention_heads": 2,'
     ' "vocab_size": 10, "intermediate_size": 8}', "field 'hidden_size' should be a whole number >= 0, got 'big'"),
])
def test_bad_files_are_user_errors(tmp_path, text, what):
    p = tmp_path / "config.json"
    p.write_text(text)
    with pytest.raises(UserError, match=what) as e:
        spec_from_path(p)
    assert "\n" not in str(e.value)


def test_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(UserError, match="no such model file"):
        spec_from_path(tmp_path / "nope.json")
    with pytest.raises(UserError):
        spec_from_path(tmp_path)


def test_qwen_moe_dense_layers_by_hand():
    # mlp_only_layers turns two layers back into dense MLPs of intermediate_size 6144
    cfg = dict(CONFIGS["qwen3-30b-a3b"], mlp_only_layers=[0, 1])
    spec = spec_from_hf_config(cfg)
    moe_layer = 128 * 3 * 2048 * 768 + 2048 * 128      # experts + router
    dense_layer = 3 * 2048 * 6144
    assert spec.n_dense_layers == 2
    assert spec.n_params == get_model("qwen3-30b-a3b").n_params - 2 * moe_layer + 2 * dense_layer


def test_gpt_oss_without_layer_types_alternates():
    cfg = {k: v for k, v in CONFIGS["gpt-oss-20b"].items() if k != "layer_types"}
    spec = spec_from_hf_config(cfg)
    assert (spec.sliding_window, spec.n_sliding_layers) == (128, 12)   # GptOssConfig's default pattern


def test_bad_vision_field_is_user_error():
    cfg = json.loads(json.dumps(CONFIGS["gemma-3-4b"]))
    cfg["vision_config"]["hidden_size"] = "wide"
    with pytest.raises(UserError, match="vision_config: field 'hidden_size' should be a whole number >= 0, got 'wide'"):
        spec_from_hf_config(cfg)


@pytest.mark.parametrize("field, value, kind", [
    # what int() / float() / bool() would have taken: "32" -> 32, True -> 1, 32.9 -> 32, "false" -> True
    ("num_hidden_layers", "32", "a whole number >= 0"),
    ("num_hidden_layers", True, "a whole number >= 0"),
    ("max_position_embeddings", 8192.5, "a whole number >= 0"),
    ("max_position_embeddings", "8192", "a whole number >= 0"),
    ("num_key_value_heads", -8, "a whole number >= 0"),
    ("rope_theta", "500000", "a finite number"),
    ("rope_theta", True, "a finite number"),
    ("tie_word_embeddings", "false", "true or false"),
    ("attention_bias", 2, "true or false"),
    ("mlp_bias", "no", "true or false"),
])
def test_config_numbers_and_flags_are_taken_only_of_their_json_type(field, value, kind):
    cfg = dict(CONFIGS["llama-3-8b"], **{field: value})
    with pytest.raises(UserError, match=f"field '{field}' should be {kind}") as e:
        spec_from_hf_config(cfg, where="config.json")
    assert "\n" not in str(e.value) and str(e.value).startswith("config.json: ")


def test_typed_fields_in_nested_parts_and_the_vision_tower():
    cfg = dict(CONFIGS["llama-3-8b"], rope_parameters={"rope_theta": "1e6"})
    with pytest.raises(UserError, match="rope_parameters: field 'rope_theta' should be a finite number"):
        spec_from_hf_config(cfg, where="config.json")
    cfg = dict(CONFIGS["llama-3-8b"], model_type="gemma3", vision_config={"patch_size": "14"})
    with pytest.raises(UserError, match="vision_config: field 'patch_size' should be a whole number"):
        spec_from_hf_config(cfg, where="config.json")
    # null is absent, an integral float a count, as the real configs write them
    assert spec_from_hf_config(dict(CONFIGS["llama-3-8b"], sliding_window=None, max_position_embeddings=131072.0)
                               ).max_context == 131072

