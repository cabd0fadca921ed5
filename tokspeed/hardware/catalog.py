"""The built-in hardware catalog (``hardware/data/hardware.toml``, generated from the reference CSV
by ``scripts/build_hardware_catalog.py``), custom TOML files, ad-hoc devices from flags, and the
``local`` profile written by ``tokspeed probe``."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from ..errors import UserError
from .datafile import DATA, load_data  # noqa: F401  (DATA: path of the committed catalog)
from .devices import all_hardware, catalog_devices as _catalog  # noqa: F401  (all_hardware: its public name)
from .names import NameIndex
from .spec import Hardware

LOCAL_NAME = "local"
LOCAL_ENV = "TOKSPEED_LOCAL_PROFILE"


@lru_cache(maxsize=1)
def _index() -> NameIndex:
    return NameIndex("hardware", [(h.id, h.name, h.aliases) for h in _catalog().values()])


def _path_kind(key: str):
    from ..userfile import path_kind

    return path_kind(key, "hardware file")


def get_hardware(name: str) -> Hardware:
    """A catalog id or alias (case-insensitive), a path to a TOML file, or ``local``."""
    if isinstance(name, Hardware):
        return name
    key = str(name).strip()
    if key.endswith(".toml") or (os.sep in key and _path_kind(key) is not None):
        return hardware_from_toml(key)
    if key.lower() == LOCAL_NAME:
        return local_hardware()
    try:
        return _catalog()[_index().resolve(key)]
    except UserError as e:
        from .match import closest_devices

        near = closest_devices(key) if e.message.startswith("unknown") else []
        if not near:
            raise
        # a table's or nvidia-smi's spelling ("NVIDIA H100 80GB HBM3"): named, not taken (a guess is not a lookup)
        hint = (f"did you mean {near[0].id} ({near[0].name})?" if len(near) == 1 else
                "did you mean one of " + ", ".join(h.id for h in near[:4]) + "?")
        raise UserError(e.message, hint) from None


def local_profile_path() -> Path:
    env = os.environ.get(LOCAL_ENV)
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "tokspeed" / "local.toml"


def local_hardware() -> Hardware:
    """This machine as ``tokspeed probe -o`` recorded it (``$TOKSPEED_LOCAL_PROFILE`` or
    ``~/.config/tokspeed/local.toml``)."""
    p = local_profile_path()
    if not p.is_file():
        raise UserError(f"no local hardware profile at {p}",
                        f"run `tokspeed probe -o {p}` first, or set ${LOCAL_ENV}")
    return hardware_from_toml(p, default_id=LOCAL_NAME)


def hardware_from_toml(path, default_id: str | None = None) -> Hardware:
    """One device from a TOML file. Top level or a ``[hardware]`` table (a probe profile) with at
    least name, kind (gpu|soc|cpu|accelerator), vendor, memory_gb, bandwidth_gbps."""
    from ..userfile import read_toml

    p, raw = read_toml(path, "hardware file", "write a TOML file with name, kind, vendor, memory_gb, bandwidth_gbps")
    if isinstance(raw.get("hardware"), dict):
        raw = raw["hardware"]
    raw = dict(raw)
    # a probed profile (tokspeed.measure.profile) carries its probe results (not a Hardware field)
    # and its fitted calibration per backend, which the engine model uses for this machine
    raw.pop("measured", None)
    cal = raw.pop("calibration", None)
    if isinstance(cal, dict):
        raw["calibration"] = {k: v for k, v in cal.items() if isinstance(v, dict)}
        for backend, entry in raw["calibration"].items():
            _check_calibration(p, backend, entry, raw.get("bandwidth_gbps"))
    raw.setdefault("id", default_id or p.stem)
    raw.setdefault("source", f"custom file {p}")
    return _with_host_link(Hardware.from_dict(raw))


def hardware_from_flags(bandwidth: str, memory: str, name: str = "custom", kind: str = "gpu",
                        vendor: str = "custom", fp16_tflops: float = 0.0, fp8_tflops: float = 0.0,
                        int8_tops: float = 0.0, host_link_gbps: float = 0.0) -> Hardware:
    """An ad-hoc device: ``hardware_from_flags("1008GB/s", "24GB", fp16_tflops=165.2)``.
    Bare numbers mean GB/s and GB; ``GiB`` is read as 2**30 bytes."""
    from ..units import parse_bytes

    bw = parse_bytes(bandwidth, what="bandwidth") / 1e9
    mem = parse_bytes(memory, what="memory") / 1e9
    return Hardware.from_dict({
        "id": name.lower().replace(" ", "-"), "name": name, "kind": kind, "vendor": vendor,
        "memory_gb": mem, "bandwidth_gbps": bw, "fp16_tflops": _number(fp16_tflops, "fp16_tflops"),
        "fp8_tflops": _number(fp8_tflops, "fp8_tflops"), "int8_tops": _number(int8_tops, "int8_tops"),
        "host_link_gbps": _number(host_link_gbps, "host_link_gbps"),
        "source": f"command-line flags (bandwidth {bandwidth}, memory {memory})",
    })


def with_tflops(hw: Hardware, tflops: float | None) -> Hardware:
    """``hw`` with its dense FP16 peak replaced by ``--tflops`` (a user's own figure wins over the catalog's;
    FP8/INT8 are left as they are); on a CPU its FP32 figure too (no tensor units: the SIMD rate is the one its
    matmuls run at) and its int8 dot-product figure in the same ratio. ``None`` returns ``hw`` unchanged."""
    if tflops is None:
        return hw
    from dataclasses import replace

    v = _number(tflops, "tflops")
    if not 0 < v < 1e8:
        raise UserError(f"tflops must be a positive number of TFLOPS, got {tflops!r}", field="tflops")
    if hw.kind == "cpu":      # a CPU has no FP16 tensor units: the figure is what its SIMD matmuls run at
        int8 = hw.int8_tops * v / hw.fp32_tflops if hw.int8_tops and hw.fp32_tflops else hw.int8_tops
        return replace(hw, fp16_tflops=v, fp32_tflops=v, int8_tops=int8, derived=hw.derived + (
            f"fp16_tflops, fp32_tflops: {v:g}, the user's own tflops (catalog FP32: {hw.fp32_tflops:g}); int8_tops "
            f"{int8:g}, the catalog's int8 : FP32 ratio kept",))
    return replace(hw, fp16_tflops=v, fp16_accumulate_2x=False,
                   derived=hw.derived + (f"fp16_tflops: {v:g}, the user's own tflops (catalog: {hw.fp16_tflops:g})",))


def _number(v, what: str) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise UserError(f"{what} must be a number, got {v!r}") from None


_CALIBRATION_NUMBERS = ("eta_memory", "eta_kv", "overhead_s", "bandwidth_gbps", "rms_rel_error")


def _check_calibration(p, backend: str, entry: dict, bandwidth_gbps) -> None:
    """A stored calibration (tokspeed.measure.calibrate) holds finite non-negative numbers, and its
    effective bandwidth (probe bandwidth x eta) is at least one byte per second: no speed of 0 or infinity."""
    for k in _CALIBRATION_NUMBERS:
        v = entry.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0):
            raise UserError(f"{p}: calibration.{backend}.{k} must be a non-negative number, got {v!r}")
    bw = entry.get("bandwidth_gbps") or bandwidth_gbps
    for k in ("eta_memory", "eta_kv"):
        if entry.get(k) and isinstance(bw, (int, float)) and entry[k] * bw * 1e9 < 1:
            raise UserError(f"{p}: calibration.{backend}.{k} = {entry[k]!r} makes the bandwidth less than one byte/s")


def _with_host_link(hw: Hardware) -> Hardware:
    """A custom device that names its host link ("PCIe 4.0 x16") but gives no rate gets it from
    the link rows, the same way the catalog does."""
    if hw.host_link and not hw.host_link_gbps:
        from dataclasses import replace

        from .links import parse_host_link

        gbps, basis = parse_host_link(hw.host_link)
        if gbps:
            return replace(hw, host_link_gbps=gbps, derived=hw.derived + (f"host_link_gbps: {basis}",))
    return hw
