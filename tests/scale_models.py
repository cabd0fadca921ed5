"""Model shapes for the scale tests, typed in from the published config.json files (the tests do not
depend on the model catalog)."""

from tokspeed.models.spec import ModelSpec

# https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json
LLAMA3_70B = ModelSpec(id="llama-3-70b", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672,
                       vocab_size=128256)
# https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json
LLAMA31_405B = ModelSpec(id="llama-3.1-405b", n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8,
                         d_ff=53248, vocab_size=128256)
# https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json
LLAMA3_8B = ModelSpec(id="llama-3-8b", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336,
                      vocab_size=128256)
# https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json
MIXTRAL = ModelSpec(id="mixtral-8x7b", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=0,
                    vocab_size=32000, n_experts=8, n_active_experts=2, d_ff_expert=14336)
# https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json
DEEPSEEK_V3 = ModelSpec(id="deepseek-v3", n_layers=61, d_model=7168, n_heads=128, n_kv_heads=128, d_ff=18432,
                        vocab_size=129280, n_experts=256, n_active_experts=8, n_shared_experts=1,
                        d_ff_expert=2048, n_dense_layers=3, kv_lora_rank=512, q_lora_rank=1536,
                        qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
# https://huggingface.co/google/gemma-2-9b/blob/main/config.json (every other layer slides over 4096)
GEMMA2_9B = ModelSpec(id="gemma-2-9b", n_layers=42, d_model=3584, n_heads=16, n_kv_heads=8, head_dim=256,
                      d_ff=14336, vocab_size=256000, tied_embeddings=True, sliding_window=4096,
                      n_sliding_layers=21)
