"""GGUF header reader: metadata, tensor names/types/shapes/offsets — never the tensor data.

Why not ``gguf.GGUFReader``: it builds numpy views for every array element (8.4 s for a Llama-3
vocabulary of 128k tokens + 280k merges on the development machine) and trusts the counts in the
file: a uint8 array claiming 2^40 elements at the end of the header keeps it looping on empty
views (still running after 20 s; this reader refuses it at once). This reader
walks the header once with ``struct`` over a read-only mmap, checks every count and length
against the bytes that remain *before* using it, keeps big arrays (the vocabulary) lazy, and
turns every defect into one ``UserError``. The GGUF layout (v2/v3, both byte orders) is
llama.cpp's ``docs/gguf.md``; tests compare what it reads with ``gguf.GGUFReader`` on the same files.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..guard.limits import MAX_ARRAY_ENTRIES, MAX_ARRAY_ENTRIES_TOTAL, MAX_TENSORS
from ..userfile import require_file
from .ggml_types import GGML_TYPE_NAMES, GGML_TYPES
from .tensor import TensorInfo

MAGIC = b"GGUF"
MAX_DIMS = 4                    # GGML_MAX_DIMS
MAX_DIM = 1 << 40               # no real dimension comes near a trillion
MAX_STRING_ARRAY = MAX_ARRAY_ENTRIES   # 4.2M strings: vocabularies and merge lists are < 1M
EAGER_ARRAY = 64                # arrays up to this many elements are decoded at once
DEFAULT_ALIGNMENT = 32          # GGUF_DEFAULT_ALIGNMENT

# GGUF value types -> struct format (8 = string, 9 = array)
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
_MIN_KV_BYTES = 8 + 4 + 1                 # key length, value type, smallest value
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8  # name length, n_dims, one dim, type, offset


class _Bad(Exception):
    """A defect in the file; turned into a UserError with the file name."""


@dataclass
class GGUFArray:
    """A metadata array kept in the file until asked for (vocabularies hold ~10^5 strings)."""

    _buf: object = field(repr=False)
    endian: str
    item_type: int
    count: int
    offset: int                 # first element

    def __len__(self) -> int:
        return self.count

    def values(self) -> list:
        if self.item_type == STRING:
            return [b.decode("utf-8", errors="replace") for b in self.raw_strings()]
        fmt = SCALAR_FORMATS[self.item_type]
        return list(struct.unpack_from(f"{self.endian}{self.count}{fmt}", self._buf, self.offset))

    def raw_strings(self) -> list[bytes]:
        out, pos, buf = [], self.offset, self._buf
        unpack = struct.Struct(self.endian + "Q").unpack_from
        for _ in range(self.count):
            (n,) = unpack(buf, pos)
            out.append(bytes(buf[pos + 8:pos + 8 + n]))
            pos += 8 + n
        return out


@dataclass
class GGUFFile:
    path: Path
    version: int
    file_size: int
    metadata: dict
    tensors: list[TensorInfo]
    alignment: int
    data_offset: int

    def get(self, key: str, default=None):
        return self.metadata.get(key, default)

    @property
    def arch(self) -> str:
        return str(self.metadata.get("general.architecture", "llama"))

    def arch_get(self, key: str, default=None):
        """``{arch}.key`` from the metadata."""
        return self.metadata.get(f"{self.arch}.{key}", default)


def read_gguf(path) -> GGUFFile:
    p = require_file(path)
    size = p.stat().st_size
    if size < 24:
        raise UserError(f"{p}: not a GGUF file (only {size} bytes; the header alone is 24)")
    try:
        with open(p, "rb") as f:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror or e})") from None
    try:
        return _Parser(p, buf, size).parse()
    except _Bad as e:
        buf.close()
        raise UserError(f"{p}: {e}", "is the file complete and really a GGUF model?") from None
    except struct.error:
        buf.close()
        raise UserError(f"{p}: truncated GGUF header", "the file ends inside its header; download it again") from None


class _Parser:
    def __init__(self, path: Path, buf, size: int):
        self.path, self.buf, self.size, self.pos = path, buf, size, 0
        self.endian = "<"

    # ---- primitives, each checking the bytes that remain ----------------------------------
    def need(self, n: int, what: str):
        if n > self.size - self.pos:
            raise _Bad(f"truncated: {what} needs {n:,} bytes at offset {self.pos:,} but the file is {self.size:,} bytes")

    def unpack(self, fmt: str, what: str):
        s = struct.Struct(self.endian + fmt)
        self.need(s.size, what)
        vals = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return vals if len(vals) > 1 else vals[0]

    def string(self, what: str, strict: bool = True) -> str:
        n = self.unpack("Q", what)
        self.need(n, what)
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            if strict:
                raise _Bad(f"{what} is not valid UTF-8 ({raw[:40]!r})") from None
            return raw.decode("utf-8", errors="replace")

    # ---- sections --------------------------------------------------------------------------
    def parse(self) -> GGUFFile:
        magic = bytes(self.buf[:4])
        if magic != MAGIC:
            raise _Bad(f"not a GGUF file (magic {magic!r}, expected {MAGIC!r})")
        self.pos = 4
        version = self.unpack("I", "version")
        if version & 0xFFFF == 0:                       # written on a big-endian machine
            self.endian = ">"
            version = struct.unpack_from(">I", self.buf, 4)[0]
        if version == 1:
            raise _Bad("GGUF version 1 is not supported (convert it again with a current llama.cpp)")
        if version not in (2, 3):
            raise _Bad(f"unknown GGUF version {version} (this reader knows 2 and 3)")
        n_tensors, n_kv = self.unpack("QQ", "tensor and metadata counts")
        left = self.size - self.pos
        if n_kv * _MIN_KV_BYTES > left:
            raise _Bad(f"header claims {n_kv:,} metadata entries, more than the {left:,} bytes left can hold")
        if n_tensors * _MIN_TENSOR_INFO_BYTES > left:
            raise _Bad(f"header claims {n_tensors:,} tensors, more than the {left:,} bytes left can hold")
        if n_tensors > MAX_TENSORS:
            raise _Bad(f"header claims {n_tensors:,} tensors, more than the {MAX_TENSORS:,} any real model has")
        self.entries = 0                                # array entries so far: MAX_ARRAY_ENTRIES_TOTAL in all

        metadata: dict = {}
        for i in range(n_kv):
            key = self.string(f"metadata key #{i}")
            if key in metadata:
                raise _Bad(f"metadata key {key!r} appears twice")
            vtype = self.unpack("I", f"type of {key!r}")
            metadata[key] = self.value(vtype, key)

        infos = []
        for i in range(n_tensors):
            infos.append(self.tensor_info(i))

        alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 \
                or alignment & (alignment - 1) or alignment > 1 << 20:
            raise _Bad(f"general.alignment must be a power of two, got {alignment!r}")
        data_offset = -(-self.pos // alignment) * alignment

        tensors, seen, spans = [], set(), []
        for name, shape, type_id, rel in infos:
            if name in seen:
                raise _Bad(f"tensor {name!r} appears twice")
            seen.add(name)
            tname, block, tsize = GGML_TYPES[type_id]
            n_el = 1
            for d in shape:
                n_el *= d
            nbytes = n_el // block * tsize
            if rel % alignment:
                raise _Bad(f"tensor {name!r}: data offset {rel:,} is not aligned to {alignment}")
            end = data_offset + rel + nbytes
            if end > self.size:
                raise _Bad(f"truncated: tensor {name!r} ends at byte {end:,} but the file has {self.size:,}")
            tensors.append(TensorInfo(name=name, dtype=tname, shape=tuple(reversed(shape)), n_bytes=nbytes,
                                      offset=data_offset + rel, file=str(self.path)))
            if nbytes:
                spans.append((data_offset + rel, end, name))
        _no_overlap(spans)
        return GGUFFile(path=self.path, version=version, file_size=self.size, metadata=metadata,
                        tensors=tensors, alignment=alignment, data_offset=data_offset)

    def value(self, vtype: int, key: str):
        """One metadata value; arrays counted against the entry budgets before anything is made."""
        if vtype in SCALAR_FORMATS:
            return self.unpack(SCALAR_FORMATS[vtype], f"value of {key!r}")
        if vtype == STRING:
            return self.string(f"value of {key!r}")
        if vtype != ARRAY:
            raise _Bad(f"metadata {key!r} has unknown value type {vtype}")
        itype, count = self.unpack("IQ", f"array header of {key!r}")
        start = self.pos
        left = self.size - self.pos
        if itype in SCALAR_FORMATS and count * struct.calcsize(SCALAR_FORMATS[itype]) > left:
            raise _Bad(f"metadata {key!r} claims {count:,} values, more than the {left:,} bytes left")
        if itype == STRING and count * 8 > left:
            raise _Bad(f"metadata {key!r} claims {count:,} strings, more than the file can hold")
        self.entries += count
        if count > MAX_ARRAY_ENTRIES or self.entries > MAX_ARRAY_ENTRIES_TOTAL:
            raise _Bad(f"metadata {key!r} claims {count:,} entries ({self.entries:,} in all arrays so far), more than "
                       f"any real model file holds ({MAX_ARRAY_ENTRIES:,} in one array, "
                       f"{MAX_ARRAY_ENTRIES_TOTAL:,} in all)")
        if itype == STRING:
            if count * 8 > left or count > MAX_STRING_ARRAY:
                raise _Bad(f"metadata {key!r} claims {count:,} strings, more than the file can hold")
            unpack = struct.Struct(self.endian + "Q").unpack_from
            pos, size = self.pos, self.size
            for _ in range(count):
                if pos + 8 > size:
                    raise _Bad(f"truncated: strings of {key!r} run past the end of the file")
                pos += 8 + unpack(self.buf, pos)[0]
            if pos > size:
                raise _Bad(f"truncated: strings of {key!r} run past the end of the file")
            self.pos = pos
        elif itype in SCALAR_FORMATS:
            width = struct.calcsize(SCALAR_FORMATS[itype])
            if count * width > left:
                raise _Bad(f"metadata {key!r} claims {count:,} values, more than the {left:,} bytes left")
            self.pos += count * width
        elif itype == ARRAY:
            raise _Bad(f"metadata {key!r} is an array of arrays, which this reader does not support")
        else:
            raise _Bad(f"metadata {key!r} is an array of unknown type {itype}")
        arr = GGUFArray(self.buf, self.endian, itype, count, start)
        if count <= EAGER_ARRAY:
            if itype == STRING:
                vals = arr.raw_strings()
                try:
                    return [v.decode("utf-8") for v in vals]
                except UnicodeDecodeError:
                    raise _Bad(f"a string in {key!r} is not valid UTF-8") from None
            return arr.values()
        return arr

    def tensor_info(self, i: int):
        name = self.string(f"name of tensor #{i}")
        if not name or len(name) > 4096:
            raise _Bad(f"tensor #{i} has an impossible name length {len(name)}")
        nd = self.unpack("I", f"dimension count of {name!r}")
        if not 1 <= nd <= MAX_DIMS:
            raise _Bad(f"tensor {name!r} has {nd} dimensions (GGML allows 1 to {MAX_DIMS})")
        shape = self.unpack(f"{nd}Q", f"shape of {name!r}")
        shape = (shape,) if nd == 1 else tuple(shape)
        for d in shape:
            if not 1 <= d <= MAX_DIM:
                raise _Bad(f"tensor {name!r} has an impossible dimension {d:,}")
        type_id, rel = self.unpack("IQ", f"type of {name!r}")
        if type_id not in GGML_TYPES:
            if type_id in GGML_TYPE_NAMES:
                raise _Bad(f"tensor {name!r} has GGML type {GGML_TYPE_NAMES[type_id]}, whose block size "
                           "tokspeed does not know yet")
            raise _Bad(f"tensor {name!r} has unknown GGML type id {type_id}")
        block = GGML_TYPES[type_id][1]
        if shape[0] % block:
            raise _Bad(f"tensor {name!r}: rows of {shape[0]} elements are not whole {GGML_TYPES[type_id][0]} "
                       f"blocks of {block}")
        return name, shape, type_id, rel


def _no_overlap(spans: list) -> None:
    """Tensor data ranges (start, end, name) may not overlap: each byte of weights belongs to one tensor
    (a file whose tensors all sit at offset 0 claims weights it does not hold)."""
    spans.sort()
    for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise _Bad(f"tensors {n0!r} and {n1!r} overlap (bytes {s1:,} to {min(e0, e1):,}): a tensor's data is its own")
