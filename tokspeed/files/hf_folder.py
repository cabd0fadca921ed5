"""Hugging Face model folders and the local Hugging Face cache (offline: nothing is downloaded).

A folder holds ``config.json`` (+ ``quantization_config`` inside it), weights as ``*.safetensors``
(sharded with ``model.safetensors.index.json``) and usually ``tokenizer.json``. A repo id such as
``HuggingFaceTB/SmolLM2-135M`` is looked up in the hub cache layout that ``huggingface_hub``
writes: ``<cache>/models--ORG--NAME/refs/main`` names the snapshot in ``snapshots/<hash>/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import UserError
from ..userfile import path_kind, read_bytes, read_json_object

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hf_cache_roots() -> list[Path]:
    """Where huggingface_hub keeps repos: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, ~/.cache."""
    roots = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]).expanduser())
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    xdg = os.environ.get("XDG_CACHE_HOME")
    roots.append((Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub")
    return roots


def find_in_hf_cache(repo_id: str, revision: str = "main") -> Path | None:
    """The snapshot folder of ``repo_id`` in the local cache, or None when it is not cached."""
    if not REPO_ID.match(repo_id):
        return None
    org, name = repo_id.split("/", 1)

    for root in hf_cache_roots():
        repo = root / f"models--{org}--{name}"
        if path_kind(repo, "Hugging Face cache folder") != "dir":
            continue
        ref = repo / "refs" / revision
        if path_kind(ref, "cache ref") == "file":
            snap_name = read_bytes(ref, "cache ref")[1].decode("utf-8", errors="replace").strip()
            snap = repo / "snapshots" / snap_name
            if snap_name and "/" not in snap_name and path_kind(snap, "cache snapshot") == "dir":
                return snap
        snapshots = repo / "snapshots"
        snaps = [s for s in snapshots.glob("*") if path_kind(s, "cache snapshot") == "dir"] \
            if path_kind(snapshots, "cache folder") == "dir" else []
        snaps.sort(key=lambda s: s.stat().st_mtime)
        if snaps:
            return snaps[-1]
        raise UserError(f"{repo_id} is in the Hugging Face cache ({repo}) but has no snapshot",
                        "download it again with `huggingface-cli download`")
    return None


def read_config(folder: Path) -> dict:
    return read_json_object(folder / "config.json", "config.json")[1]


def quant_bits(config: dict) -> tuple[str, int]:
    """(method, bits) of ``quantization_config``: ('gptq', 4), ('awq', 4), ('fp8', 8), ('', 0) for none."""
    q = config.get("quantization_config") or (config.get("text_config") or {}).get("quantization_config")
    if not isinstance(q, dict):
        return "", 0
    method = str(q.get("quant_method", "") or "").lower()
    bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
    if not bits and isinstance(q.get("config_groups"), dict):      # compressed-tensors
        for group in q["config_groups"].values():
            w = (group or {}).get("weights") or {}
            if isinstance(w, dict) and w.get("num_bits"):
                bits = w["num_bits"]
                break
    if not bits:
        bits = {"mxfp4": 4, "fp8": 8, "bitsandbytes": 4 if q.get("load_in_4bit") else 8}.get(method, 0)
    try:
        bits = int(bits)
    except (TypeError, ValueError):
        raise UserError(f"quantization_config bits {bits!r} is not a number") from None
    if not 0 <= bits <= 64:
        raise UserError(f"quantization_config bits {bits} is impossible")
    return method, bits
