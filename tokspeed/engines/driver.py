"""The GPU driver under a llama.cpp backend: which one runs, and which of the kernels' device features it exposes.

The same part on the same llama.cpp build runs other shaders under another driver: ggml-vulkan.cpp reads the
driver's ``VkDriverId`` and extensions when it builds its pipelines (``ggml_vk_get_device``), so the prompt
matmuls run the cooperative-matrix shaders on the matrix units, or the scalar ``mul_mm`` shaders on the vector
ALUs, and BF16 weights the BF16 cooperative-matrix shaders or the FP32 fallback -- by driver. The vocabulary, each
driver's features per architecture family and the default per OS are data (``tokspeed/engines/drivers.toml``, each
entry with its source and confidence); this module reads them:

    ``DRIVERS``: name -> entry;  ``api_of(backend)``: vulkan | cuda | rocm | sycl | metal | None
    ``resolve(backend, hw)`` -> ``Driver`` (the driver named on ``hw.driver``, else the OS default: ``assumed``
        says why) or None for a backend without a driver choice; a driver that cannot serve the backend, the
        vendor or the OS is one UserError
    ``features(driver, hw)`` -> ``Features`` (coopmat, coopmat2, bf16_matrix, integer_dot on ``hw``'s family)
    ``gate_matrix_units(backend, hw, family, table)`` -> the backends table's answer, held to the driver's coopmat
    ``bf16_fallback(backend, hw, quant)`` -> True where BF16 weights take the FP32 fallback shader
    ``check_hardware_driver(driver, os, vendor, where)`` -> the Hardware field check (names, vendor, OS)

The OS is ``hw.os`` (a hardware file's ``os``, or ``--os``), else ``DEFAULT_OS`` (Linux; macOS for Apple): the public
llama.cpp measurements the engine fit rests on (data/validation/*-sources.md) are Linux runs but for a few named
Windows ones. Whether the engine fit has rows under a driver is ``driver_fitted`` (``fitted_drivers``): where it has
none, the driver changes the kernel path (the units) only, never a fitted factor, and the band says so
(``tokspeed.engines.bands``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean
from ..hardware.arch import vulkan_family

TABLE = Path(__file__).parent / "drivers.toml"
OSES = ("linux", "windows", "macos")
# the OS a prediction assumes where none is stated: Linux, macOS for Apple parts (module docstring)
DEFAULT_OS = "linux"
VENDOR_OS = {"apple": "macos"}
# llama.cpp backend suffix -> the API its kernels call (engines of runtime llama.cpp: llama.cpp-*, ik_llama.cpp-*)
APIS = ("vulkan", "cuda", "rocm", "sycl", "metal")
FEATURES = ("coopmat", "coopmat2", "bf16_matrix", "integer_dot")
API_WORDS = {"vulkan": "Vulkan", "cuda": "CUDA", "rocm": "ROCm", "sycl": "SYCL", "metal": "Metal"}
OS_WORDS = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}
KNOWN_VENDORS = ("nvidia", "amd", "intel", "apple")     # the vendors drivers.toml covers on every API they run


@lru_cache(maxsize=1)
def _table() -> dict:
    with open(TABLE, "rb") as f:
        return tomllib.load(f)["driver"]


def names() -> list[str]:
    """Every driver name of the vocabulary, in the table's order."""
    return list(_table())


def entry(name: str) -> dict:
    """The table entry of a known driver name (UserError listing the known ones otherwise)."""
    key = str(name).strip().lower()
    if key not in _table():
        raise UserError(f"unknown driver {name!r}; known drivers: {', '.join(names())}",
                        did_you_mean(key, names()), field="driver")
    return _table()[key]


def api_of(backend: str) -> str | None:
    """The API a llama.cpp-family backend's kernels call (``llama.cpp-vulkan`` -> vulkan), else None (the CPU
    backend, the ideal bound and engines with kernels of their own: no driver choice modelled)."""
    if not str(backend).startswith(("llama.cpp-", "ik_llama.cpp-")):   # the backend names of capabilities.toml
        return None
    api = backend.rsplit("-", 1)[1]
    return api if api in APIS else None


def os_of(hw) -> tuple[str, bool]:
    """(the OS ``hw`` runs, whether it was stated): its ``os`` field, else the vendor's or the default."""
    stated = (getattr(hw, "os", "") or "").lower()
    if stated:
        return stated, True
    return VENDOR_OS.get((hw.vendor or "").lower(), DEFAULT_OS), False


@dataclass(frozen=True)
class Driver:
    name: str
    api: str
    os: str
    assumed: str | None = None     # why this driver, when none was named (None: named on the hardware)


def resolve(backend: str, hw) -> Driver | None:
    """The driver ``backend`` runs under on ``hw``: ``hw.driver`` where it is a driver of the backend's API, else the
    default for the API, the vendor and the OS (a device drives several APIs: its Vulkan driver says nothing of ROCm,
    and the note says the named one was set aside); None where the backend has no GPU driver choice (vLLM, the CPU
    backend). UserError: no driver of the API ships for this vendor on this OS (CUDA on macOS)."""
    api = api_of(backend)
    named = (getattr(hw, "driver", "") or "").lower()
    os_name, os_stated = os_of(hw)
    aside = ""
    if named:
        e = entry(named)
        if api == e["api"]:
            return Driver(named, api, os_name)
        if api is None:
            return None          # no GPU driver choice here: the device's driver does not apply
        aside = f"driver {named} is a {API_WORDS[e['api']]} driver, and {backend} runs {API_WORDS[api]}: "
    if api is None:
        return None
    vendor = (hw.vendor or "").lower()
    found = [n for n, e in _table().items() if e["api"] == api and vendor in e["vendors"] and os_name in e["os_default"]]
    if not found:
        if vendor in KNOWN_VENDORS:
            raise UserError(f"no {API_WORDS[api]} driver runs {hw.vendor} GPUs on {OS_WORDS[os_name]}",
                            f"{API_WORDS[api]} for {hw.vendor}: " + (", ".join(
                                f"{n} ({', '.join(OS_WORDS[o] for o in _table()[n]['os'])})"
                                for n in for_api(api, vendor)) or "none") + "; name another os or engine", field="os")
        return None          # a vendor the table has no driver for: the backend tables decide alone
    name = found[0]
    choices = for_api(api, hw.vendor)
    assumed = None
    if len(choices) > 1 or aside:     # only a choice is an assumption (CUDA and Metal have one driver)
        also = [c for c in choices if c != name and os_name in _table()[c]["os"]]
        assumed = (aside + f"{name}, the {OS_WORDS[os_name]} default for {hw.vendor} {API_WORDS[api]}"
                   + ("" if os_stated else f" (no os stated: {OS_WORDS[os_name]} assumed)")
                   + (f"; also on {OS_WORDS[os_name]}: {', '.join(also)}" if also else ""))
    return Driver(name, api, os_name, assumed)


def kernel_cost_of(backend: str, hw) -> str | None:
    """The backend whose per-kernel cost ``backend`` takes on ``hw`` under its driver (drivers.toml
    ``kernel_cost_of``), None where the driver names none (or there is no driver)."""
    d = resolve(backend, hw) if api_of(backend) == "vulkan" else None
    return _table()[d.name].get("kernel_cost_of") if d is not None else None


def kernel_cost_sources() -> set[str]:
    """The backends some driver takes its per-kernel cost from (drivers.toml ``kernel_cost_of``): the engine fit
    fits them first and hands their launch_s to the backends that take it (scripts/fit_calibration.py)."""
    return {e["kernel_cost_of"] for e in _table().values() if "kernel_cost_of" in e}


def for_api(api: str | None, vendor: str) -> list[str]:
    """The drivers of an API that drive a vendor's GPUs."""
    return [n for n, e in _table().items() if e["api"] == api and (vendor or "").lower() in e["vendors"]]


@dataclass(frozen=True)
class Features:
    coopmat: bool = False        # VK_KHR_cooperative_matrix, as ggml-vulkan.cpp accepts it
    coopmat2: bool = False       # VK_NV_cooperative_matrix2
    bf16_matrix: bool = False    # BF16 cooperative-matrix shapes (VK_KHR_shader_bfloat16)
    integer_dot: bool = False    # VK_KHR_shader_integer_dot_product, accelerated 4x8-bit

    @property
    def matrix_path(self) -> bool:
        """The prompt matmuls run a cooperative-matrix shader (coopmat1 or coopmat2)."""
        return self.coopmat or self.coopmat2


def driver_family(hw) -> str:
    """The architecture family drivers.toml keys a driver's features on, from ``hw.arch`` ("" when the device
    states none or the table has no family for it)."""
    return vulkan_family(getattr(hw, "arch", None))


def features(driver: Driver | None, family: str) -> Features | None:
    """A Vulkan driver's features on an architecture family (archs.toml vulkan_family values); None for a driver of
    another API, no driver, or a family the table does not name (nothing known: the caller keeps its default)."""
    if driver is None or driver.api != "vulkan" or not family:
        return None
    e = _table()[driver.name]
    return Features(**{f: family in e.get(f, []) for f in FEATURES})


def gate_matrix_units(backend: str, hw, family: str, table: bool | None) -> bool | None:
    """``table`` (backends.uses_matrix_units before the driver: the part's matrix units run the backend's shaders)
    held to the driver: on Vulkan the prompt matmuls reach the matrix units only where the driver exposes
    cooperative matrices on that family and ggml-vulkan.cpp accepts them. Other backends: ``table`` unchanged."""
    if api_of(backend) != "vulkan" or table is None:
        return table
    f = features(resolve(backend, hw), family)
    return table if f is None else (table and f.matrix_path)


def bf16_fallback(backend: str, hw, family: str, quant) -> bool:
    """BF16 weights on a Vulkan device whose matmuls take a cooperative-matrix path but whose driver has no BF16
    cooperative matrices: ggml-vulkan.cpp's "BF16 fallback for coopmat devices without bf16 coopmat support"
    (``matmul_bf16_fp32``: FP32 math on the vector ALUs)."""
    if api_of(backend) != "vulkan" or str(quant or "").strip().upper() != "BF16":
        return False
    f = features(resolve(backend, hw), family)
    return f is not None and f.matrix_path and not f.bf16_matrix


def check_hardware_driver(driver: str, os_name: str, vendor: str, where: str) -> tuple[str, str]:
    """The ``driver`` and ``os`` fields of a Hardware, checked: a known OS, a known driver for the vendor that ships
    for that OS; returned lower-cased. One UserError naming the field otherwise."""
    os_name = (os_name or "").strip().lower()
    if os_name and os_name not in OSES:
        raise UserError(f"{where}: os must be one of {', '.join(OSES)}, got {os_name!r}", field="os")
    driver = (driver or "").strip().lower()
    if not driver:
        return driver, os_name
    e = entry(driver)
    v = (vendor or "").lower()
    if v not in e["vendors"]:
        raise UserError(f"{where}: driver {driver} drives {', '.join(e['vendors'])} GPUs, not {vendor}",
                        ("choose one of " + ", ".join(mine)) if (mine := [n for n, x in _table().items() if v in x["vendors"]])
                        else f"no driver in tokspeed's table drives {vendor} GPUs: drop `driver`",
                        field="driver")
    if os_name and os_name not in e["os"]:
        raise UserError(f"{where}: driver {driver} ships for {', '.join(e['os'])}, not {os_name}", field="driver")
    return driver, os_name


@lru_cache(maxsize=1)
def _fitted() -> dict:
    """{backend: drivers of its scored calibration rows}: the ``drivers`` lists scripts/fit_calibration.py writes into
    bands.toml (read here directly: engines.tables sits above this module, which hardware.spec imports)."""
    with open(Path(__file__).with_name("bands.toml"), "rb") as f:
        bands = tomllib.load(f)
    return {k: set(v.get("drivers", [])) for k, v in bands.items() if isinstance(v, dict)}


def fitted_drivers(backend: str) -> set[str]:
    """The drivers the engine fit has scored rows of for ``backend``."""
    return set(_fitted().get(backend, set()))


def driver_fitted(backend: str, driver: str) -> bool:
    """Whether ``backend``'s fitted values rest on rows run under ``driver`` ("" -- no driver choice -- is)."""
    return not driver or driver in fitted_drivers(backend)


def on_driver(hw, driver: str | None = None, os: str | None = None):
    """``hw`` with the ``driver`` and ``os`` a user names (None: the device's own, or the default), checked by
    ``Hardware`` itself (one UserError naming the field)."""
    if driver is None and os is None:
        return hw
    changes = {k: v for k, v in (("driver", driver), ("os", os)) if v is not None}
    if "os" in changes and "driver" not in changes and hw.driver and changes["os"].strip().lower() not in _table().get(
            hw.driver, {}).get("os", OSES):
        changes["driver"] = ""       # another OS than the device file's driver ships for: that OS's default
    return replace(hw, **changes)
