"""The built-in hardware catalog (``hardware/data/hardware.toml``, generated from the reference CSV
by ``scripts/build_hardware_catalog.py``), custom TOML files, ad-hoc devices from flags, and the
``local`` profile written by ``tokspeed probe``."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from ..errors import UserError
from ..units import GIB, parse_bytes, parse_capacity
from ..userfile import path_kind, read_toml
from .devices import catalog_devices as _catalog
from .links import parse_host_link
from .match import closest_devices
from .names import NameIndex
from .spec import Hardware

LOCAL_NAME = "local"
LOCAL_ENV = "TOKSPEED_LOCAL_PROFILE"


@lru_cache(maxsize=1)
def _index() -> NameIndex:
    return NameIndex("hardware", [(h.id, h.name, h.aliases) for h in _catalog().values()], default_variants())


@lru_cache(maxsize=1)
def default_variants() -> dict[str, tuple[str, str]]:
    """{name: (id, why)}: the device a name shared by several entries stands for (``data/default_variants.toml``)."""
    with open(Path(__file__).parent / "data" / "default_variants.toml", "rb") as f:
        raw = tomllib.load(f)
    return {k: (v["id"], v["why"]) for k, v in raw.get("variant", {}).items()}


def _path_kind(key: str):
    return path_kind(key, "hardware file")


def get_hardware(name: str) -> Hardware:
    """A catalog id or alias (case-insensitive), a path to a TOML file, or ``local``; a name as people write it
    (``lookup_hardware``, which also returns the note saying what the name was taken for)."""
    return lookup_hardware(name)[0]


# the machine a chip is sold in, written before it ("Mac Studio M2 Ultra", "MacBook Pro M3 Max"): not the chip's name
MACHINE_WORDS = re.compile(r"^(apple\s+)?(mac\s*studio|mac\s*mini|mac\s*pro|macbook\s*(pro|air)?|imac)\s+", re.I)
MEMORY_SUFFIX = re.compile(r"^(.+?)[\s_-]*(\d+)\s*gb$", re.I)


def lookup_hardware(name) -> tuple[Hardware, str | None]:
    """(device, note) for ``name``: an id, alias, full name, TOML path or ``local`` (no note); a name shared by
    several entries takes its default variant (``data/default_variants.toml``: "h100" -> h100-sxm), and a name as
    people write it -- vendor words, the memory size ("GeForce RTX 4090", "RTX 4090 24GB"), the machine around an
    Apple chip ("Mac Studio M2 Ultra") -- the one device it matches (``match.closest_devices``); an Apple chip
    with a memory size ("m4-16gb", "M4 Pro 48GB") is that chip with that much memory. The note says what was
    taken for what; an unknown or still ambiguous name is a UserError naming the candidates."""
    if isinstance(name, Hardware):
        return name, None
    key = str(name).strip()
    if key.endswith(".toml") or (os.sep in key and _path_kind(key) is not None):
        return hardware_from_toml(key), None
    if key.lower() == LOCAL_NAME:
        return local_hardware(), None
    try:
        eid, note = _index().resolve_note(key)
        return _catalog()[eid], note
    except UserError as e:
        first = e
    chip = MACHINE_WORDS.sub("", key)
    m = MEMORY_SUFFIX.match(chip)
    base = _loose(m.group(1)) if m else None
    if base is not None and base[0].kind == "soc" and base[0].vendor.lower() == "apple":
        hw, why = base
        size = float(m.group(2))
        note = f"hardware {key!r} taken as {hw.id} ({hw.name}{'; ' + why if why else ''}) with {size:g} GB of memory"
        return (with_memory(hw, size, repr(key)) if size != hw.memory_gb else hw), note
    found = _loose(chip)
    if found is not None:
        hw, why = found
        return hw, f"hardware {key!r} taken as {hw.id} ({hw.name}{'; ' + why if why else ''})"

    near = closest_devices(chip) if first.message.startswith("unknown") else []
    if not near:
        raise first
    # several devices and no default among them: named, not taken (a guess is not a lookup)
    raise UserError(first.message, "did you mean one of " + ", ".join(h.id for h in near[:4]) + "?") from None


def _loose(name: str) -> tuple[Hardware, str] | None:
    """(device, why) for a name the index knows or whose words match one device (with a model number), or
    several among which a default variant is (``why`` then says why that one and names the rest); None otherwise."""
    try:
        eid, why, others = _index().pick(name)
    except UserError:
        pass
    else:
        return _catalog()[eid], (why or "") + (f"; also: {', '.join(others)}" if why and others else "")
    if not any(ch.isdigit() for ch in name):
        return None           # no model number: a name like "NVIDIA Laptop GPU" is no one device

    near = closest_devices(name)
    if len(near) == 1:
        return near[0], ""
    ids = {h.id for h in near}
    hit = _index().default_among(ids)
    if hit is None:
        return None
    eid, why = hit
    return _catalog()[eid], f"{why}; also: {', '.join(sorted(ids - {eid}))}"


def with_memory(hw: Hardware, memory_gb: float, why: str) -> Hardware:
    """``hw`` with ``memory_gb`` GiB of memory (a Mac of another configuration, ``--memory``): its usable share derived
    again (Apple: the Metal working-set fraction), everything else kept."""
    if not 0 < memory_gb < 1e6:
        raise UserError(f"memory must be a positive number of GiB, got {memory_gb!r}")
    return replace(hw, memory_gb=memory_gb, usable_memory_gb=0.0,
                   derived=hw.derived + (f"memory_gb: {memory_gb:g} from {why} (catalog: {hw.memory_gb:g})",))


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
    if path_kind(p, "local hardware profile ($TOKSPEED_LOCAL_PROFILE)") != "file":   # a name too long is one line
        raise UserError(f"no local hardware profile at {p}",
                        f"run `tokspeed probe -o {p}` first, or set ${LOCAL_ENV}")
    return hardware_from_toml(p, default_id=LOCAL_NAME)


def hardware_from_toml(path, default_id: str | None = None) -> Hardware:
    """One device from a TOML file. Top level or a ``[hardware]`` table (a probe profile) with at
    least name, kind (gpu|soc|cpu|accelerator), vendor, memory_gb, bandwidth_gbps."""
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
    Bare numbers mean GB/s and GB; bandwidth's GB is 10^9 bytes, memory's GB (as labels write it) and GiB are
    2**30 bytes (``units.parse_capacity``)."""
    bw = parse_bytes(bandwidth, what="bandwidth") / 1e9
    mem = parse_capacity(memory, what="memory") / GIB
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

        gbps, basis = parse_host_link(hw.host_link)
        if gbps:
            return replace(hw, host_link_gbps=gbps, derived=hw.derived + (f"host_link_gbps: {basis}",))
    return hw
