"""open_model_file: a MODEL argument that names a real file -> ModelFile (spec + exact storage).

Accepted: ``*.gguf`` (also split ``-00001-of-0000N.gguf``), ``*.safetensors`` (with the
``config.json`` beside it), a Hugging Face folder, a repo id in the local HF cache, and
``ollama:NAME[:TAG]``. Anything else returns None and the catalog decides.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UserError
from ..models.catalog import resolve_id
from ..models.hf_config import config_title, spec_from_hf_config
from ..quant.format_table import ftype_name
from ..userfile import path_kind, require_file
from .classify import Part, classify_gguf
from .gguf_reader import read_gguf
from .gguf_spec import spec_from_gguf
from .hf_folder import REPO_ID, find_in_hf_cache, read_config
from .hf_hub import open_hub_repo
from .hf_storage import hf_storage
from .model_file import ModelFile
from .ollama import resolve_ollama_layers
from .safetensors_reader import read_safetensors_files, shard_files
from .storage import Entry, FileStorage, dominant_dtype
from .tensor import TensorInfo

_SPLIT = re.compile(r"^(.*)-(\d{5})-of-(\d{5})\.gguf$")


def open_model_file(arg) -> ModelFile | None:
    text = str(arg)
    if text.startswith("ollama:"):
        ref = text[len("ollama:"):]
        model, projectors = resolve_ollama_layers(ref)
        mf = open_gguf(model, id=ref)
        if projectors:
            mf.storage = _with_projectors(mf.storage, projectors)
        return mf

    p = Path(text).expanduser()
    if p.suffix.lower() == ".gguf":
        return open_gguf(require_file(p))
    if p.suffix.lower() == ".safetensors":
        require_file(p)
        if path_kind(p.parent / "config.json", "config.json") != "file":
            raise UserError(f"{p}: a .safetensors file needs the config.json of its model beside it")
        return open_folder(p.parent, files=[p])
    kind = path_kind(p, "model file")
    if kind == "dir":
        return open_folder(p)
    if kind == "file":
        return None

    forced = text.startswith("hf:")            # hf:ORG/NAME reads the hub even when the catalog knows the id
    text = text.removeprefix("hf:")
    snap = find_in_hf_cache(text)
    if snap is not None:
        path_kind(snap / "config.json", "config.json")   # a dangling or looping link in the cache says so
    if snap is not None and any(snap.glob("*.safetensors")):
        return open_folder(snap, id=text)      # fully downloaded: the local files
    if REPO_ID.match(text) and (forced or _not_in_catalog(text)):
        return open_hub_repo(text)             # config.json + safetensors headers (tokspeed.files.hf_hub)
    if snap is not None:
        return open_folder(snap, id=text)
    return None


def _not_in_catalog(name: str) -> bool:
    return resolve_id(name) is None


# ---- GGUF --------------------------------------------------------------------------------------
def open_gguf(path: Path, id: str = "") -> ModelFile:
    g = read_gguf(path)
    tensors = list(g.tensors)
    n_split = g.get("split.count", 0)
    if isinstance(n_split, int) and n_split > 1:
        tensors = _gguf_split_tensors(Path(path), n_split, tensors)
        g.tensors = tensors
    spec = spec_from_gguf(g, id=id or _stem(Path(path)))
    entries = [Entry(t, classify_gguf(t.name), t.n_elements) for t in tensors]
    ftype = g.get("general.file_type")
    quant = (ftype_name(ftype) if isinstance(ftype, int) else "") or dominant_dtype(entries)
    return ModelFile(spec=spec, storage=FileStorage(quant, entries), kind="gguf", path=Path(path),
                     quant=quant, gguf=g)


def _with_projectors(storage: FileStorage, projectors: list[Path]) -> FileStorage:
    """Ollama keeps a vision model's image encoder in its own GGUF: resident, not read per text token."""
    extra = [Entry(t, Part(None, None, "vision"), t.n_elements) for p in projectors for t in read_gguf(p).tensors]
    return FileStorage(storage.name, storage.entries + extra)


def _stem(p: Path) -> str:
    m = _SPLIT.match(p.name)
    return m.group(1) if m else p.stem


def _gguf_split_tensors(first: Path, n: int, tensors: list[TensorInfo]) -> list[TensorInfo]:
    m = _SPLIT.match(first.name)
    if not m or int(m.group(2)) != 1:
        raise UserError(f"{first}: part of a {n}-file split GGUF; give the first file (-00001-of-{n:05d}.gguf)")

    out = list(tensors)
    for i in range(2, n + 1):
        part = first.with_name(f"{m.group(1)}-{i:05d}-of-{n:05d}.gguf")
        if path_kind(part, "GGUF shard") != "file":
            raise UserError(f"{first}: missing shard {part.name}", "download every part of the split model")
        out += read_gguf(part).tensors
    return out


# ---- safetensors / HF folder -------------------------------------------------------------------
def open_folder(folder: Path, files: list[Path] | None = None, id: str = "") -> ModelFile:

    folder = Path(folder)
    has_config = path_kind(folder / "config.json", "config.json") == "file"
    if not has_config:
        ggufs = sorted(folder.glob("*.gguf"))
        firsts = [g for g in ggufs if not _SPLIT.match(g.name) or _SPLIT.match(g.name).group(2) == "00001"]
        if len(firsts) == 1:
            return open_gguf(firsts[0], id=id)
        if firsts:
            raise UserError(f"{folder}: holds {len(firsts)} GGUF files", "name the one you mean")
        raise UserError(f"{folder}: a model folder needs a config.json (or one .gguf file)")
    config = read_config(folder)

    spec = spec_from_hf_config(config, id=id or config_title(folder / "config.json", config))
    tok = folder / "tokenizer.json"
    tok = tok if path_kind(tok, "tokenizer.json") == "file" else None
    files = files if files is not None else shard_files(folder)
    if not files:
        return ModelFile(spec=spec, storage=None, kind="config", path=folder, tokenizer_json=tok)
    storage = hf_storage(config, read_safetensors_files(files))
    return ModelFile(spec=spec, storage=storage, kind="safetensors", path=folder, quant=storage.name,
                     tokenizer_json=tok, extra={"quantization_config": config.get("quantization_config")})

