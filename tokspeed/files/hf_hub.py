"""A Hugging Face repository by id, read without downloading weights.

``config.json`` (and ``model.safetensors.index.json`` for a sharded model) come through
``huggingface_hub.hf_hub_download``, so they land in, and are read back from, the ordinary Hugging Face
cache. Each safetensors file contributes only its header: two HTTP range requests (the 8-byte length,
then the JSON header) through huggingface_hub's session, URL and token handling. The headers are kept in
``<cache>/tokspeed/hf-headers/ORG--NAME/<commit>/<file>.json`` so that a repo read once works offline.

Environment, read at call time: ``HF_ENDPOINT`` (the hub's URL), ``HF_TOKEN`` (gated or private repos),
``HF_HUB_OFFLINE=1`` (never touch the network), ``HF_HUB_CACHE`` / ``HF_HOME`` (the cache), and
``XDG_CACHE_HOME`` (where the header cache lives). Every failure is one UserError line: a gated repo
(401), a missing repo or file (404), or no network and nothing cached.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from ..errors import UserError
from ..guard.bounded import BodyTooLarge, BodyTooSlow, read_body, with_deadline
from ..guard.limits import MAX_TENSORS
from ..guard.names import remote_name
from ..guard.outputs import write_file
from ..guard.typed import loads
from ..models.hf_config import spec_from_hf_config
from ..userfile import read_json_object
from .hf_folder import hf_cache_roots, read_config
from .hf_storage import hf_storage
from .model_file import ModelFile
from .safetensors_reader import MAX_HEADER, _bad, _no_overlap, _tensor, check_header_counts
from .tensor import TensorInfo

CONFIG, INDEX, SINGLE = "config.json", "model.safetensors.index.json", "model.safetensors"
HUB_DEADLINE_S = 60.0  # one file or header, start to end (policy: a real one takes well under a second)


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _hub_cache() -> str | None:
    return str(hf_cache_roots()[0])


def _header_cache() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tokspeed" / "hf-headers"


def _token() -> str | bool | None:
    return os.environ.get("HF_TOKEN") or None


class _Hub:
    """One repository at one revision: files through hf_hub_download, headers by range request."""

    def __init__(self, repo_id: str, revision: str = "main"):
        self.repo_id, self.revision = repo_id, revision
        self.offline = _env_true("HF_HUB_OFFLINE")
        self.commit = ""
        from huggingface_hub import constants  # lazy: optional dependency (huggingface_hub, the files extra)

        # huggingface_hub reads HF_HUB_OFFLINE once, at import: follow the environment of this call
        constants.HF_HUB_OFFLINE = self.offline

    def _fail(self, e: Exception, what: str) -> UserError:
        from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, LocalEntryNotFoundError,
                                            OfflineModeIsEnabled, RepositoryNotFoundError, RevisionNotFoundError)  # lazy: optional dependency (huggingface_hub, the files extra)

        rid = self.repo_id
        if isinstance(e, (LocalEntryNotFoundError, OfflineModeIsEnabled)) or _is_network(e):
            return UserError(f"reading {rid} needs the network ({_endpoint()}) and its {what} is not in the "
                             "local Hugging Face cache", "connect, or download it once with network access")
        if isinstance(e, GatedRepoError):
            return UserError(f"{rid} is gated on the Hugging Face hub (401)",
                             "accept its licence on its page, then set HF_TOKEN to a token with access")
        if isinstance(e, RepositoryNotFoundError):
            return UserError(f"no Hugging Face repository {rid!r} (404, or private)",
                             "check the id; for a private repo set HF_TOKEN")
        if isinstance(e, RevisionNotFoundError):
            return UserError(f"{rid} has no revision {self.revision!r}")
        if isinstance(e, EntryNotFoundError):
            return UserError(f"{rid} has no {what} (404)", "is it a transformers model repository?")
        return UserError(f"{rid}: cannot read {what} from the hub ({type(e).__name__}: {str(e)[:100]})")

    def reachable(self) -> bool:
        """One quick request to the hub (no retries): False when it cannot be reached at all."""
        from huggingface_hub import hf_hub_url  # lazy: optional dependency (huggingface_hub, the files extra)
        from huggingface_hub.utils import get_session  # lazy: optional dependency (huggingface_hub, the files extra)

        try:
            r = get_session().head(hf_hub_url(self.repo_id, CONFIG, revision=self.revision, endpoint=_endpoint()),
                                   timeout=5)
        except Exception as e:   # noqa: BLE001
            if _is_network(e):
                return False
            return True
        if r.status_code >= 500:          # one line now, not a dozen retries and then "no network"
            raise UserError(f"the Hugging Face hub at {_endpoint()} answered HTTP {r.status_code} for {self.repo_id}",
                            "the hub is failing; try again later")
        return True

    def download(self, filename: str) -> Path:
        """A small file of the repo via the Hugging Face cache (config, shard index)."""
        from huggingface_hub import hf_hub_download  # lazy: optional dependency (huggingface_hub, the files extra)


        try:
            path = Path(with_deadline(lambda: hf_hub_download(
                self.repo_id, filename, revision=self.revision, cache_dir=_hub_cache(), endpoint=_endpoint(),
                token=_token(), local_files_only=self.offline), HUB_DEADLINE_S, f"{self.repo_id}/{filename}"))
        except UserError:
            raise
        except Exception as e:   # noqa: BLE001 - every hub failure becomes one line
            raise self._fail(e, filename) from None
        if not self.commit and path.parent.parent.name == "snapshots":
            self.commit = path.parent.name
        return path

    def has(self, filename: str) -> bool:
        """Whether the repo holds ``filename`` (a 404 is an answer, anything else an error)."""
        try:
            self.download(filename)
            return True
        except UserError as err:
            if f"has no {filename} (404)" in str(err):
                return False
            raise

    def _cached_header(self, filename: str) -> Path:
        org_name = remote_name(self.repo_id.replace("/", "--"), "repository id")
        rev = remote_name(self.commit or self.revision, f"{self.repo_id}: revision")  # the hub names the commit
        return _header_cache() / org_name / rev / f"{remote_name(filename, 'shard')}.json"

    def header(self, filename: str) -> list[TensorInfo]:
        """The tensors of one safetensors file from its header (cached after the first read)."""
        cached = self._cached_header(filename)
        if cached.is_file():
            data = read_json_object(cached, "header cache")[1]
        elif self.offline:
            raise UserError(f"reading {self.repo_id} needs the network: the header of {filename} is not cached",
                            "unset HF_HUB_OFFLINE and run once with network access")
        else:
            data = self._fetch_header(filename)

            write_file(cached, json.dumps(data), "header cache")
        return _tensors(f"{self.repo_id}/{filename}", data)

    def _fetch_header(self, filename: str) -> dict:
        n_raw = self._range(filename, 0, 8)
        (n,) = struct.unpack("<Q", n_raw[:8]) if len(n_raw) >= 8 else (None,)
        if n is None or n > MAX_HEADER:
            raise UserError(f"{self.repo_id}/{filename}: not a safetensors file (header length {n})")
        raw, size = self._range(filename, 8, 8 + n, want_size=True)
        check_header_counts(f"{self.repo_id}/{filename}", raw)
        header = loads(raw, f"{self.repo_id}/{filename}: header")     # the one JSON gate
        if not isinstance(header, dict):
            raise UserError(f"{self.repo_id}/{filename}: header is not a JSON object")
        return {"header_len": n, "file_size": size, "header": header}

    def _range(self, filename: str, start: int, end: int, want_size: bool = False):
        """Bytes [start, end) of a repo file by an HTTP range request (the hub redirects large files)."""
        from huggingface_hub import hf_hub_url  # lazy: optional dependency (huggingface_hub, the files extra)
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status  # lazy: optional dependency (huggingface_hub, the files extra)

        url = hf_hub_url(self.repo_id, filename, revision=self.commit or self.revision, endpoint=_endpoint())
        headers = build_hf_headers(token=_token())
        headers["Range"] = f"bytes={start}-{end - 1}"

        try:
            with get_session().stream("GET", url, headers=headers, follow_redirects=True, timeout=30) as r:
                if r.status_code >= 400:  # its message from at most 64 kB of the error page
                    import httpx  # lazy: optional dependency (httpx, the server extra)

                    page = read_body(r, 1 << 16, HUB_DEADLINE_S, keep_first=True)
                    hf_raise_for_status(httpx.Response(r.status_code, headers=r.headers, content=page,
                                                       request=r.request))
                # a server that ignores Range sends the whole file from byte 0: read only what we need
                body = read_body(r, end if r.status_code == 200 else end - start, HUB_DEADLINE_S,
                                 keep_first=r.status_code == 200)
        except UserError:
            raise
        except (BodyTooLarge, BodyTooSlow) as e:
            raise UserError(f"{self.repo_id}/{filename}: {e}") from None
        except Exception as e:   # noqa: BLE001
            raise self._fail(e, filename) from None
        if r.status_code == 200 and len(body) > end - start:      # a server that ignores Range
            body = body[start:end]
        if len(body) != end - start:
            raise UserError(f"{self.repo_id}/{filename}: the hub sent {len(body)} bytes for a {end - start}-byte range")
        if not want_size:
            return body
        total = r.headers.get("Content-Range", "").rpartition("/")[2]
        return body, int(total) if total.isdigit() else None


def _is_network(e: Exception) -> bool:
    name = type(e).__name__
    return any(k in name for k in ("Connect", "Timeout", "Network", "Transport", "Connection"))


def _whole(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _tensors(where: str, data) -> list[TensorInfo]:
    """The tensors of a hub's header, fresh or from the header cache, every field typed: the header length
    within MAX_HEADER, the file size (when the hub stated one) holding it, at most MAX_TENSORS entries, each
    range inside the data and apart from the others."""
    p = Path(where)
    data = data if isinstance(data, dict) else {}
    header, n, size = data.get("header"), data.get("header_len"), data.get("file_size")
    if not isinstance(header, dict) or not _whole(n) or not 0 <= n <= MAX_HEADER:
        raise _bad(p, f"not a safetensors header (length {str(n)[:40]}, "
                      f"{type(header).__name__} where an object belongs)")
    if size is not None and (not _whole(size) or not 8 + n <= size < 1 << 53):
        raise _bad(p, f"file size {str(size)[:40]} cannot hold its {n:,}-byte header")
    header = dict(header)
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or len(header) > MAX_TENSORS:
        raise _bad(p, f"__metadata__ is not an object, or more than {MAX_TENSORS:,} tensors")
    # no stated size (no Content-Range): the offsets cannot be checked against the file's end
    data_size = size - 8 - n if size is not None else float("inf")
    tensors = [_tensor(p, name, info, 8 + n, data_size) for name, info in header.items()]
    _no_overlap(p, tensors)
    return tensors


def open_hub_repo(repo_id: str, revision: str = "main"):
    """ModelFile for a hub repository: spec from config.json, exact storage from the shard headers."""
    try:
        import huggingface_hub  # noqa: F401  # lazy: optional dependency (huggingface_hub, the files extra)
    except ImportError:
        raise UserError(f"reading {repo_id} from the Hugging Face hub needs huggingface_hub",
                        "pip install 'tokspeed[files]'") from None
    hub = _Hub(repo_id, revision)
    if not hub.offline and not hub.reachable():
        hub.offline = True          # no network: the cache alone, at once (huggingface_hub would retry ~25 s)
        from huggingface_hub import constants  # lazy: optional dependency (huggingface_hub, the files extra)

        constants.HF_HUB_OFFLINE = True
    cfg_path = hub.download(CONFIG)
    config = read_config(cfg_path.parent)
    spec = spec_from_hf_config(config, id=repo_id)
    if hub.has(INDEX):
        _, index = read_json_object(hub.download(INDEX), INDEX)   # size, nesting and numbers capped
        if not isinstance(index.get("weight_map") or {}, dict):
            raise UserError(f"{repo_id}: {INDEX} has no weight_map object")
        names = list((index.get("weight_map") or {}).values())
        files = sorted(set(names)) if all(isinstance(f, str) for f in names) else []
        if not files or not all(f.endswith(".safetensors") for f in files):
            raise UserError(f"{repo_id}: {INDEX} lists no safetensors shards")

        for f in files:                 # a shard is a name in the repo, never a path the hub chooses
            remote_name(f, f"{repo_id}: {INDEX} shard")
    else:
        files = [SINGLE]
    tensors = []
    for f in files:
        try:
            tensors += hub.header(f)
        except UserError as e:
            # no safetensors weights (404), or offline with only config.json cached: the config alone
            if (f == SINGLE and "(404)" in str(e)) or "needs the network" in str(e):
                return ModelFile(spec=spec, storage=None, kind="config", path=cfg_path.parent,
                                 extra={"hub": _endpoint(), "note": str(e)})
            raise
    storage = hf_storage(config, tensors)
    return ModelFile(spec=spec, storage=storage, kind="safetensors", path=cfg_path.parent,
                     quant=storage.name, extra={"hub": _endpoint(), "commit": hub.commit,
                                         "quantization_config": config.get("quantization_config")})
