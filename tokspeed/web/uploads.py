"""Files clients of `tokspeed web` sent, kept in one private temporary folder under names the server chose.

The server never reads a path a client names: an uploaded model is ``upload:<id>``, resolved here."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import uuid
from pathlib import Path

from ..guard.outputs import write_file
from .errors import ApiError

UPLOAD_LIMITS = {"config": 1 << 20, "gguf": 32 << 20}    # bytes: a config.json; the start of a GGUF (its header)
MAX_GGUF_SIZE = 1 << 42                                  # a declared GGUF file size (4 TiB)
MAX_UPLOADS = 64
UPLOAD_RE = re.compile(r"^upload:([0-9a-f]{32})$")


class Uploads:
    """Files clients sent, kept in one private temporary folder under names the server chose."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="tokspeed-web-"))
        self.files: dict[str, Path] = {}
        self.lock = threading.Lock()

    def add(self, kind: str, data: bytes, name: str = "uploaded-model", size: int = 0) -> tuple[str, Path]:
        """Store ``data``; ``size`` > len(data) extends the file to the size the client declared for the
        whole GGUF, as a sparse hole (no disk used), so the header's tensor offsets check out."""
        if kind not in UPLOAD_LIMITS:
            raise ApiError(400, f"unknown upload kind {kind!r}: use kind=config (config.json) or kind=gguf")
        if len(data) > UPLOAD_LIMITS[kind]:
            raise ApiError(413, f"{kind} upload too large: {len(data):,} bytes (limit {UPLOAD_LIMITS[kind]:,})")
        uid = uuid.uuid4().hex
        sub = self.dir / uid / safe_name(name)       # the model id is the folder name (config) or file stem
        path = sub / ("config.json" if kind == "config" else safe_name(name) + ".gguf")
        write_file(path, data, "upload")             # the one writer (guard.outputs): no link followed
        if size > len(data):
            os.truncate(path, size)
        with self.lock:
            self.files[uid] = path
            while len(self.files) > MAX_UPLOADS:
                old = next(iter(self.files))
                self._remove(self.files.pop(old))
        return f"upload:{uid}", path

    def path(self, ref: str) -> Path:
        m = UPLOAD_RE.match(ref)
        with self.lock:
            p = self.files.get(m.group(1)) if m else None
        if p is None:
            raise ApiError(404, f"no upload {ref!r} (uploads last while the server runs; upload the file again)")
        return p

    def remove(self, ref: str):
        p = self.path(ref)
        with self.lock:
            self.files.pop(UPLOAD_RE.match(ref).group(1), None)
        self._remove(p)

    def _remove(self, p: Path):
        upload_dir = p.parent.parent
        if upload_dir.parent == self.dir:
            shutil.rmtree(upload_dir, ignore_errors=True)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def safe_name(name) -> str:
    """A model name fit for a folder name: letters, digits, '.', '_' and '-', at most 64 characters."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name or "")).strip(".-")[:64]
    return text or "uploaded-model"
