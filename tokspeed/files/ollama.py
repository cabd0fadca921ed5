"""The Ollama store: ``ollama:NAME[:TAG]`` -> the GGUF blob its manifest points to.

Layout (ollama/server/modelpath.go): ``$OLLAMA_MODELS`` (default ``~/.ollama/models``) holds
``manifests/<host>/<namespace>/<name>/<tag>`` (JSON, OCI-style ``layers`` with ``mediaType`` and
``digest``) and ``blobs/sha256-<hex>``. Host defaults to ``registry.ollama.ai``, namespace to
``library``, tag to ``latest``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import UserError
from ..userfile import parse_json, path_kind, read_bytes

MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
PROJECTOR_MEDIA_TYPE = "application/vnd.ollama.image.projector"   # vision encoder (a CLIP GGUF)
DEFAULT_HOST, DEFAULT_NAMESPACE, DEFAULT_TAG = "registry.ollama.ai", "library", "latest"
_PART = re.compile(r"^[A-Za-z0-9][\w.-]*$")
# a real manifest is under 4 KB (a config and a handful of layers); 1 MiB bounds the objects it can make
MANIFEST_BYTES = 2**20
_DIGEST = re.compile(r"sha256[:-][0-9a-f]{64}")     # matched whole: no trailing newline, no path


def ollama_root() -> Path:
    env = os.environ.get("OLLAMA_MODELS")
    return Path(env).expanduser() if env else Path.home() / ".ollama" / "models"


def manifest_path(ref: str, root: Path | None = None) -> Path:
    root = root or ollama_root()
    name, _, tag = ref.partition(":")
    tag = tag or DEFAULT_TAG
    parts = [x for x in name.split("/")]
    if not name or len(parts) > 3 or not all(_PART.match(x) for x in parts + [tag]):
        raise UserError(f"bad Ollama model name {ref!r}", "write it like ollama:llama3.1:8b")
    if len(parts) == 1:
        parts = [DEFAULT_HOST, DEFAULT_NAMESPACE, parts[0]]
    elif len(parts) == 2:
        parts = [DEFAULT_HOST, *parts]
    return root.joinpath("manifests", *parts, tag)


def resolve_ollama(ref: str, root: Path | None = None) -> Path:
    """Path of the GGUF blob of ``NAME[:TAG]`` (``ref`` without the ``ollama:`` prefix)."""
    return resolve_ollama_layers(ref, root)[0]


def resolve_ollama_layers(ref: str, root: Path | None = None) -> tuple[Path, list[Path]]:
    """(model GGUF blob, projector GGUF blobs) of ``NAME[:TAG]``."""
    root = root or ollama_root()

    m = manifest_path(ref, root)
    if path_kind(m, "Ollama manifest") != "file":
        raise UserError(f"ollama:{ref} is not in the Ollama store at {root}",
                        "run `ollama pull` first, or set OLLAMA_MODELS to your store")
    try:
        manifest = parse_json(*read_bytes(m, "Ollama manifest", cap=MANIFEST_BYTES))
        layers = manifest["layers"]
        digests = [layer["digest"] for layer in layers if layer.get("mediaType") == MODEL_MEDIA_TYPE]
        projectors = [layer["digest"] for layer in layers if layer.get("mediaType") == PROJECTOR_MEDIA_TYPE]
    except (KeyError, TypeError, AttributeError) as e:
        raise UserError(f"{m}: not a valid Ollama manifest ({type(e).__name__})") from None
    if not digests:
        raise UserError(f"{m}: the manifest lists no model layer ({MODEL_MEDIA_TYPE})")
    return _blob(ref, m, root, digests[0]), [_blob(ref, m, root, d) for d in projectors]


def _blob(ref: str, manifest: Path, root: Path, digest) -> Path:
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise UserError(f"{manifest}: bad digest {str(digest)[:80]!r}")
    blob = root / "blobs" / digest.replace(":", "-")
    if os.path.islink(blob) and Path(os.path.realpath(blob)).parent != Path(os.path.realpath(root / "blobs")):
        raise UserError(f"ollama:{ref}: blob {blob.name} is a link out of the store ({root / 'blobs'})",
                        "a blob is a file inside the store's blobs folder")

    if path_kind(blob, "Ollama blob") != "file":
        raise UserError(f"ollama:{ref}: the manifest points to blob {blob.name}, which is missing from {root / 'blobs'}",
                        "the store is incomplete; run `ollama pull` again")
    return blob
