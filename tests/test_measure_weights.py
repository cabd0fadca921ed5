"""Real-weight loading: a Hugging Face safetensors folder maps onto the decoder's roles, and
--text streams tokens with the first step's next-token distribution."""

import json

import pytest

from tests.conftest import run_cli

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from tokspeed.measure.backend_torch import load_model  # noqa: E402
from tokspeed.measure.decoder import Decoder, DecoderConfig  # noqa: E402

CFG = {"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
       "num_key_value_heads": 2, "intermediate_size": 48, "vocab_size": 120, "rms_norm_eps": 1e-6,
       "rope_theta": 1000000.0, "tie_word_embeddings": True, "max_position_embeddings": 256}


def _hf_folder(path):
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    g = torch.Generator().manual_seed(0)
    d, kv, f, V = 32, 16, 48, 120
    t = {"model.embed_tokens.weight": torch.randn(V, d, generator=g) * 0.3,
         "model.norm.weight": 1 + 0.1 * torch.randn(d, generator=g)}
    for i in range(2):
        p = f"model.layers.{i}."
        for name, shape in [("self_attn.q_proj.weight", (d, d)), ("self_attn.k_proj.weight", (kv, d)),
                            ("self_attn.v_proj.weight", (kv, d)), ("self_attn.o_proj.weight", (d, d)),
                            ("self_attn.q_proj.bias", (d,)), ("self_attn.k_proj.bias", (kv,)),
                            ("self_attn.v_proj.bias", (kv,)), ("mlp.gate_proj.weight", (f, d)),
                            ("mlp.up_proj.weight", (f, d)), ("mlp.down_proj.weight", (d, f)),
                            ("input_layernorm.weight", (d,)), ("post_attention_layernorm.weight", (d,))]:
            t[p + name] = torch.randn(*shape, generator=g) * 0.3
    path.mkdir()
    save_file(t, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(CFG))
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["서울 맛집 추천해줘", "부산 맛집 알려줘", "서울 카페 추천"] * 5,
                            trainers.BpeTrainer(vocab_size=CFG["vocab_size"], special_tokens=["[UNK]"]))
    tok.save(str(path / "tokenizer.json"))
    return t


def test_safetensors_folder_maps_every_tensor(tmp_path):
    t = _hf_folder(tmp_path / "m")
    lm = load_model(str(tmp_path / "m"), "cpu", "F32", max_seq=16, max_batch=1, prompt=4)
    assert lm.source == "safetensors" and lm.tokenizer is not None
    assert lm.decoder.cfg.qkv_bias and lm.decoder.cfg.tied_embeddings and lm.decoder.cfg.norm_eps == 1e-6
    # the same tensors given by role directly: identical logits
    roles = {"token_embd": t["model.embed_tokens.weight"], "output_norm": t["model.norm.weight"]}
    hf = {"input_layernorm.weight": "attn_norm", "post_attention_layernorm.weight": "ffn_norm",
          "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k",
          "self_attn.v_proj.weight": "attn_v", "self_attn.o_proj.weight": "attn_output",
          "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
          "self_attn.v_proj.bias": "attn_v.bias", "mlp.gate_proj.weight": "ffn_gate",
          "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down"}
    for i in range(2):
        for k, r in hf.items():
            roles[f"blk.{i}.{r}"] = t[f"model.layers.{i}.{k}"]
    cfg = DecoderConfig(n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, head_dim=8, d_ff=48, vocab_size=120,
                        rope_theta=1e6, norm_eps=1e-6, tied_embeddings=True, qkv_bias=True)
    ref = Decoder(cfg, roles, max_seq=16)
    toks = torch.tensor([[3, 7, 11, 5]])
    assert torch.allclose(lm.decoder(toks, 0), ref(toks, 0), atol=1e-6)


def test_text_streams_tokens_and_candidates(tmp_path, monkeypatch):
    _hf_folder(tmp_path / "m")
    r = run_cli("measure", tmp_path / "m", "--text", "서울 맛집 추천해줘", "--gen", "5", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    kinds = [e["kind"] for e in out["events"]]
    assert kinds[:2] == ["prompt", "candidates"] and kinds.count("token") == 5
    top = out["events"][1]["top"]
    assert len(top) == 5 and all(0 <= p <= 1 for _, p in top)
    assert [p for _, p in top] == sorted((p for _, p in top), reverse=True)
