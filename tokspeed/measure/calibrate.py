"""This machine's decode efficiency, fitted from a measured run.

Model: seconds per decoded token = bytes_read_per_token / (bandwidth * eta_memory) + overhead_s,
with ``bandwidth`` the profile's measured read bandwidth. ``eta_memory`` (the fraction of the probe
bandwidth the engine's kernels reach) and ``overhead_s`` (per-token fixed cost: kernel launches,
Python, sampling) are fitted by least squares over the run's points (KV depths, models), which
differ in bytes per token. They are stored per backend in the profile's [calibration.<backend>] table.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Calibration:
    backend: str
    eta_memory: float
    overhead_s: float
    bandwidth_gbps: float      # the probe bandwidth eta is relative to
    n_points: int
    rms_rel_error: float       # of the fit on its own points
    fitted_on: str = ""
    date: str = ""

    def seconds_per_token(self, bytes_per_token: float) -> float:
        return bytes_per_token / (self.bandwidth_gbps * 1e9 * self.eta_memory) + self.overhead_s

    def tok_s(self, bytes_per_token: float) -> float:
        return 1.0 / self.seconds_per_token(bytes_per_token)

    def to_dict(self) -> dict:
        return asdict(self)


def fit(points, bandwidth_gbps: float, backend: str, fitted_on: str = "") -> Calibration:
    """Least squares of t = a * bytes + b over ``points`` = [(bytes_per_token, seconds_per_token)];
    eta = 1 / (a * bandwidth). With one distinct byte count (or a negative intercept), the overhead
    is pinned to 0 and only eta is fitted (through the origin)."""
    pts = [(float(x), float(t)) for x, t in points if x > 0 and t > 0]
    if not pts:
        raise ValueError("no points to fit")
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    mt = sum(t for _, t in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    a = b = None
    if n >= 2 and sxx > 0:
        a = sum((x - mx) * (t - mt) for x, t in pts) / sxx
        b = mt - a * mx
    if a is None or a <= 0 or b < 0:
        a = sum(x * t for x, t in pts) / sum(x * x for x, _ in pts)
        b = 0.0
    bw = bandwidth_gbps * 1e9
    cal = Calibration(backend, 1.0 / (a * bw), b, bandwidth_gbps, n, 0.0, fitted_on,
                      _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    rel = [(cal.seconds_per_token(x) - t) / t for x, t in pts]
    rms = (sum(r * r for r in rel) / n) ** 0.5
    return Calibration(**{**asdict(cal), "rms_rel_error": rms})


def store_calibration(profile_path, cal: Calibration) -> Path:
    """Write ``cal`` into the profile's [calibration.<backend>] table, keeping everything else."""
    from .profile import read_profile, write_profile

    prof = read_profile(profile_path)
    table = dict(prof.get("calibration") or {})
    table[cal.backend] = cal.to_dict()
    prof["calibration"] = table
    return write_profile(prof, profile_path)


def calibration_from_profile(profile: dict, backend: str | None = None) -> Calibration | None:
    table = profile.get("calibration") or {}
    entries = {k: v for k, v in table.items() if isinstance(v, dict)}
    if not entries:
        return None
    entry = entries.get(backend) if backend else next(iter(entries.values()))
    if not entry:
        return None
    return Calibration(**{k: entry[k] for k in Calibration.__dataclass_fields__ if k in entry})


def load_calibration(hardware, backend: str | None = None) -> Calibration | None:
    """The calibration stored for ``hardware``: a profile path, or a Hardware whose name matches the
    local profile (``tokspeed.measure.profile.local_profile_path()``). None when there is none, so a
    catalog device never picks up this machine's fit. ``backend`` None takes the first stored."""
    from .profile import local_profile_path, read_profile

    if isinstance(hardware, (str, Path)):
        p = Path(hardware).expanduser()
        return calibration_from_profile(read_profile(p), backend) if p.is_file() else None
    p = local_profile_path()
    if not p.is_file():
        return None
    prof = read_profile(p)
    if prof.get("name") != getattr(hardware, "name", None):
        return None
    return calibration_from_profile(prof, backend)
