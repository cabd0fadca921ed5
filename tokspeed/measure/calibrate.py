"""This machine's decode efficiency, fitted from a measured run.

Model: seconds per decode step = weight_bytes / (bandwidth * eta_memory) + kv_bytes / (bandwidth *
eta_kv) + overhead_s, with ``bandwidth`` the profile's measured read bandwidth. ``eta_memory`` (the
fraction of the probe bandwidth the matrix kernels reach), ``eta_kv`` (the same for attention over
the KV cache, which also pays softmax and per-head work) and ``overhead_s`` (per-step fixed cost:
Python, kernel launches, sampling) are fitted by least squares on relative error over the run's
points (KV depths, models). When the points cannot separate KV from weights (one depth, or a fit
that would make a term negative) eta_kv = eta_memory, and if need be overhead_s = 0. They are stored
per backend in the profile's [calibration.<backend>] table.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass
from pathlib import Path

from ..hardware.catalog import local_profile_path
from .profile import read_profile, write_profile


@dataclass(frozen=True)
class Calibration:
    backend: str
    eta_memory: float
    overhead_s: float
    bandwidth_gbps: float      # the probe bandwidth the etas are relative to
    n_points: int
    rms_rel_error: float       # of the fit on its own points
    fitted_on: str = ""
    date: str = ""
    eta_kv: float = 0.0        # 0 -> same as eta_memory
    flash_attention: bool | None = None   # llama.cpp: whether the run's attention was fused (None: not recorded)
    attention_net: bool = False   # fitted with the engine model's attention traffic beyond one KV read counted as KV
    attention_compute_net: bool = False   # fitted on step times net of the model's attention compute excess

    def seconds_per_token(self, bytes_per_token: float, kv_bytes_per_token: float = 0.0) -> float:
        """Seconds for one step reading ``bytes_per_token`` in all, ``kv_bytes_per_token`` of them KV."""
        bw = self.bandwidth_gbps * 1e9
        kv = min(kv_bytes_per_token, bytes_per_token)
        return (bytes_per_token - kv) / (bw * self.eta_memory) + kv / (bw * (self.eta_kv or self.eta_memory)) \
            + self.overhead_s

    def tok_s(self, bytes_per_token: float, kv_bytes_per_token: float = 0.0) -> float:
        return 1.0 / self.seconds_per_token(bytes_per_token, kv_bytes_per_token)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}     # TOML has no null


def _lstsq_relative(rows, ts):
    """Coefficients minimising sum(((rows . c) - t) / t)^2."""
    import numpy as np  # lazy: optional dependency (numpy, the files/measure extra)

    A = np.array(rows, dtype=float) / np.array(ts, dtype=float)[:, None]
    c, *_ = np.linalg.lstsq(A, np.ones(len(ts)), rcond=None)
    return [float(v) for v in c]


def fit(points, bandwidth_gbps: float, backend: str, fitted_on: str = "", flash_attention: bool | None = None,
        attention_net: bool = False, attention_compute_net: bool = False) -> Calibration:
    """Fit over ``points`` = [(bytes_per_step, seconds_per_step[, kv_bytes_per_step])]. Tries
    (eta_memory, eta_kv, overhead), then (eta_memory, overhead) with KV counted like weights, then
    eta_memory alone, keeping the first whose terms are all physical (positive etas, overhead >= 0)."""
    pts = [(float(p[0]), float(p[1]), float(p[2]) if len(p) > 2 else 0.0) for p in points if p[0] > 0 and p[1] > 0]
    if not pts:
        raise ValueError("no points to fit")
    ts = [t for _, t, _ in pts]
    kvs = {round(kv) for _, _, kv in pts}
    models = []
    if len(kvs) > 1 and len(pts) >= 4:
        models.append(("kv", [[b - kv, kv, 1.0] for b, _, kv in pts]))
    if len({round(b) for b, _, _ in pts}) > 1:
        models.append(("overhead", [[b, 1.0] for b, _, _ in pts]))
    models.append(("eta", [[b] for b, _, _ in pts]))
    bw = bandwidth_gbps * 1e9
    for kind, rows in models:
        c = _lstsq_relative(rows, ts)
        if kind == "kv" and c[0] > 0 and c[1] > 0 and c[2] >= 0:
            eta, eta_kv, over = 1 / (c[0] * bw), 1 / (c[1] * bw), c[2]
            break
        if kind == "overhead" and c[0] > 0 and c[1] >= 0:
            eta, eta_kv, over = 1 / (c[0] * bw), 0.0, c[1]
            break
        if kind == "eta" and c[0] > 0:
            eta, eta_kv, over = 1 / (c[0] * bw), 0.0, 0.0
            break
    else:
        raise ValueError("no physical fit")
    cal = Calibration(backend, eta, over, bandwidth_gbps, len(pts), 0.0, fitted_on,
                      _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), eta_kv, flash_attention,
                      attention_net, attention_compute_net)
    rel = [(cal.seconds_per_token(b, kv) - t) / t for b, t, kv in pts]
    return Calibration(**{**asdict(cal), "rms_rel_error": (sum(r * r for r in rel) / len(rel)) ** 0.5})


def store_calibration(profile_path, cal: Calibration) -> Path:
    """Write ``cal`` into the profile's [calibration.<backend>] table, keeping everything else."""
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
    local profile (``tokspeed.hardware.catalog.local_profile_path()``). None when there is none, so a
    catalog device never picks up this machine's fit. ``backend`` None takes the first stored."""
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
