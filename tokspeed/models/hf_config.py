"""Reading a Hugging Face ``config.json`` (file or folder) into a ModelSpec."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UserError
from .spec import ModelSpec


def spec_from_path(path) -> ModelSpec:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise UserError(f"no such model file: {path}")
    if p.suffix == ".toml":
        import tomllib

        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{p}: not valid TOML ({e})") from None
        raw.pop("aliases", None)
        raw.setdefault("id", p.stem)
        return ModelSpec.from_dict(raw)
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise UserError(f"{p}: expected a JSON object")
    return spec_from_hf_config(cfg, id=p.parent.name)


def spec_from_hf_config(cfg: dict, id: str = "") -> ModelSpec:
    """Map the standard HF fields; family-specific fields handled per model_type."""
    cfg = dict(cfg.get("text_config") or {}, **{k: v for k, v in cfg.items() if k != "text_config"}) \
        if "text_config" in cfg and "hidden_size" not in cfg else cfg
    need = {"num_hidden_layers": ("num_hidden_layers", "n_layer"), "hidden_size": ("hidden_size", "n_embd"),
            "num_attention_heads": ("num_attention_heads", "n_head"), "vocab_size": ("vocab_size",)}
    got, missing = {}, []
    for key, names in need.items():
        for n in names:
            if n in cfg:
                got[key] = cfg[n]
                break
        else:
            missing.append(key)
    if missing:
        raise UserError(f"config.json lacks {', '.join(missing)} (model_type {cfg.get('model_type', '?')!r})")
    d = got["hidden_size"]
    h = got["num_attention_heads"]
    return ModelSpec(
        id=id or cfg.get("_name_or_path", "") or cfg.get("model_type", "model"),
        family=cfg.get("model_type", "unknown"),
        n_layers=got["num_hidden_layers"],
        d_model=d,
        n_heads=h,
        n_kv_heads=cfg.get("num_key_value_heads") or h,
        head_dim=cfg.get("head_dim") or 0,
        d_ff=cfg.get("intermediate_size") or cfg.get("n_inner") or 4 * d,
        vocab_size=got["vocab_size"],
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        rope_theta=float(cfg.get("rope_theta", 10000.0)),
        max_context=int(cfg.get("max_position_embeddings", 4096)),
    )
