"""safetensors header reader: the JSON header of each file (and the shard index), never the data.

Layout (huggingface/safetensors README): 8-byte little-endian header length N, N bytes of UTF-8
JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``, then the
data. Every field is checked against the file size before it is trusted; a defect is one UserError.
"""

from __future__ import annotations

import struct
from math import prod
from pathlib import Path

from ..errors import UserError
from ..guard.limits import MAX_TENSORS
from ..userfile import parse_json, path_kind, read_json, require_file
from .tensor import TensorInfo

# bits per element of each safetensors dtype (safetensors/src/tensor.rs Dtype)
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
MAX_HEADER = 100_000_000        # the safetensors library refuses headers above 100 MB too
INDEX = "model.safetensors.index.json"
MAX_DIMS = 8                    # a tensor of more dimensions is refused (no model has one)
# separators one entry can hold: its shape's (MAX_DIMS - 1), its offsets' 1, between its three keys 2, after it 1
ENTRY_COMMAS = (MAX_DIMS - 1) + 1 + 2 + 1


def _bad(path, msg):
    return UserError(f"{path}: {msg}", "is the file complete and really a safetensors file?")


def read_safetensors_header(path) -> tuple[list[TensorInfo], dict]:
    """(tensors, __metadata__) of one .safetensors file."""
    p = require_file(path)
    size = p.stat().st_size
    if size < 8:
        raise _bad(p, f"only {size} bytes, shorter than the 8-byte header length")
    try:
        with open(p, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > size - 8:
                raise _bad(p, f"header length {n:,} is larger than the file ({size:,} bytes)")
            if n > MAX_HEADER:
                raise _bad(p, f"header length {n:,} exceeds the {MAX_HEADER:,}-byte limit")
            raw = f.read(n)
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror or e})") from None

    check_header_counts(p, raw)
    try:
        header = parse_json(p, raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _bad(p, "header is not valid UTF-8") from None
    except UserError as e:
        raise _bad(p, f"header: {e.message.removeprefix(f'{p}: ')}") from None
    if not isinstance(header, dict):
        raise _bad(p, "header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict):
        raise _bad(p, "__metadata__ is not an object")
    data_size = size - 8 - n
    tensors = []
    for name, info in header.items():
        tensors.append(_tensor(p, name, info, 8 + n, data_size))
    _no_overlap(p, tensors)
    return tensors, meta


def check_header_counts(p, raw: bytes) -> None:
    """Objects and array entries counted before any is made: one object per tensor, at most ENTRY_COMMAS
    separators per tensor (a 60 MB header of one long shape made 400 MB of integers)."""
    if raw.count(b"{") > MAX_TENSORS + 2:
        raise _bad(p, f"header holds more than {MAX_TENSORS:,} tensors, more than any real model file")
    if raw.count(b",") > ENTRY_COMMAS * (MAX_TENSORS + 2):
        raise _bad(p, f"header holds more than {ENTRY_COMMAS * (MAX_TENSORS + 2):,} entries, "
                      f"more than {MAX_TENSORS:,} tensors of {MAX_DIMS} dimensions can")


def _no_overlap(p, tensors: list[TensorInfo]) -> None:
    """Tensor data ranges may not overlap (each byte of weights belongs to one tensor)."""
    spans = sorted((t.offset, t.offset + t.n_bytes, t.name) for t in tensors if t.n_bytes)
    for (s0, e0, n0), (s1, _, n1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise _bad(p, f"tensors {n0!r} and {n1!r} overlap at byte {s1:,}: a tensor's data is its own")


def _tensor(p: Path, name: str, info, data_start: int, data_size: int) -> TensorInfo:
    if not isinstance(info, dict):
        raise _bad(p, f"entry {name!r} is not an object")
    dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise _bad(p, f"tensor {name!r} has unknown dtype {str(dtype)[:40]!r}")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or \
            not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
        raise _bad(p, f"tensor {name!r} has an impossible shape {str(shape)[:60]}")
    if not (isinstance(offs, list) and len(offs) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) for o in offs)
            and 0 <= offs[0] <= offs[1]):
        raise _bad(p, f"tensor {name!r} has bad data_offsets {str(offs)[:60]}")
    if offs[1] > data_size:
        raise _bad(p, f"truncated: tensor {name!r} ends at data byte {offs[1]:,} but the file holds {data_size:,}")
    bits = prod(shape) * DTYPE_BITS[dtype]
    need = (bits + 7) // 8
    if offs[1] - offs[0] != need:
        raise _bad(p, f"tensor {name!r}: {offs[1] - offs[0]:,} bytes for shape {shape} of {dtype} (expected {need:,})")
    return TensorInfo(name=name, dtype=dtype, shape=tuple(shape), n_bytes=need,
                      offset=data_start + offs[0], file=str(p))


def read_safetensors_files(paths) -> list[TensorInfo]:
    out, seen = [], set()
    for path in paths:
        tensors, _ = read_safetensors_header(path)
        for t in tensors:
            if t.name in seen:
                raise UserError(f"{path}: tensor {t.name!r} appears in two shards")
            seen.add(t.name)
            out.append(t)
    return out


def shard_files(folder: Path) -> list[Path]:
    """The .safetensors files of a model folder: from the index when there is one, checked to exist."""
    index = folder / INDEX
    if path_kind(index, "shard index") == "file":
        _, data = read_json(index, "shard index")
        try:
            weight_map = data["weight_map"]
            names = sorted(set(weight_map.values()))
        except (KeyError, TypeError, AttributeError) as e:
            raise UserError(f"{index}: not a valid shard index ({type(e).__name__}: {str(e)[:60]})") from None
        files = []
        for n in names:
            if not isinstance(n, str) or "/" in n or "\\" in n or n.startswith("."):
                raise UserError(f"{index}: bad shard name {n!r}")
            f = folder / n
            if path_kind(f, "shard") != "file":
                raise UserError(f"{folder}: missing shard {n} (listed in {INDEX})",
                                "download every shard of the model")
            files.append(f)
        return files
    return sorted(folder.glob("*.safetensors"))
