"""Memory-bandwidth utilisation (MBU) shown only when it is a measurement.

MBU = bytes read per decode step / step time / the device's peak bandwidth. Above 100 % it is not physics:
the step cannot read faster than the memory delivers, so the divisor is wrong (a bandwidth probe taken while
other processes used the memory reads low). MBU is therefore reported only when
- the bandwidth it divides by is trusted: a catalog figure, or a probe whose repeats spread at most
  ``UNSTABLE_SPREAD`` of their median (``tokspeed.measure.stats``; the probe re-measures an unstable figure
  before it writes it), and
- the quotient is at most 1.
Otherwise ``mbu`` is None and ``mbu_unreliable`` says why and what to do (re-run ``tokspeed probe`` idle).
"""

from __future__ import annotations

from .stats import UNSTABLE_SPREAD

BANDWIDTH_PROBES = ("gpu_read", "cpu_read")      # the probes a profile's bandwidth_gbps comes from (profile.py)


def probe_spread(profile: dict | None) -> float | None:
    """The spread of the probe a profile's ``bandwidth_gbps`` was measured by (None: not probed, or unknown)."""
    measured = (profile or {}).get("measured") or {}
    for name in BANDWIDTH_PROBES:
        if f"{name}_gbps" in measured and isinstance(measured.get(f"{name}_spread"), (int, float)):
            return float(measured[f"{name}_spread"])
    return None


def untrusted_bandwidth(profile: dict | None) -> str:
    """'' when a profile's bandwidth may be divided by; else why not."""
    spread = probe_spread(profile)
    if spread is None or spread <= UNSTABLE_SPREAD:
        return ""
    return (f"the profile's bandwidth probe spread {spread:.0%} of its median (> {UNSTABLE_SPREAD:.0%}): "
            "not a figure to divide by; re-run `tokspeed probe` on an idle machine")


def utilisation(achieved_gbps: float, peak_gbps: float, untrusted: str = "") -> tuple[float | None, str]:
    """(MBU, '') when it is a measurement; (None, why) when it is not (see the module docstring)."""
    if untrusted:
        return None, untrusted
    if not peak_gbps or peak_gbps <= 0:
        return None, "no peak bandwidth for this device"
    mbu = achieved_gbps / peak_gbps
    if mbu > 1:
        return None, (f"achieved {achieved_gbps:,.1f} GB/s exceeds the {peak_gbps:,.1f} GB/s it would divide by: "
                      "that bandwidth is too low (a probe on a busy machine?); re-run `tokspeed probe` idle")
    return mbu, ""
