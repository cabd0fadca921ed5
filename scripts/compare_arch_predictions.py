#!/usr/bin/env python3
"""Snapshot every answer the device-architecture rules feed, to compare two trees (issue 25 item 2: "architecture
as data" must leave predictions unchanged).

    PYTHONPATH=. python scripts/compare_arch_predictions.py snapshot OUT.json
    PYTHONPATH=. python scripts/compare_arch_predictions.py compare BEFORE.json AFTER.json

The snapshot holds, per catalog device, what the classifiers say (FP32 lanes per core, MMQ unit at 16 and 512
tokens, tensor cores, memory class, family) and llama-3.1-8b Q4_K_M decode/prefill on a llama.cpp engine of its
vendor, and, per row of data/validation/calibration.csv (and the rows of any CSV named by
$TOKSPEED_CALIBRATION_CSV), the predicted tok/s. ``compare`` prints the largest relative change and every key that
differs.
"""

from __future__ import annotations

import json
import math
import sys


def _engine_for(hw) -> str:
    v = (hw.vendor or "").lower()
    if hw.kind == "cpu":
        return "llama.cpp-cpu"
    if v.startswith("apple"):
        return "llama.cpp-metal"
    if v.startswith("amd"):
        return "llama.cpp-rocm"
    if v.startswith("intel"):
        return "llama.cpp-sycl"
    return "llama.cpp-cuda"


def snapshot() -> dict:
    from tokspeed.calibration import device_family, load_rows
    from tokspeed.calibration.evaluate import predicted_tok_s
    from tokspeed.engines.issue import fp32_lanes_per_core
    from tokspeed.engines.memory import memory_class
    from tokspeed.engines.mmq import has_tensor_cores, mmq_unit
    from tokspeed.hardware.devices import all_hardware
    from tokspeed.predict import predict

    out = {}
    for hw in all_hardware():
        out[f"hw:{hw.id}:class"] = [fp32_lanes_per_core(hw), mmq_unit(hw, 16), mmq_unit(hw, 512),
                                    has_tensor_cores(hw), memory_class(hw), device_family(hw.name, hw.vendor)]
        try:
            p = predict("llama-3.1-8b", hw, quant="Q4_K_M", engine=_engine_for(hw), prompt=512, gen=128)
            out[f"hw:{hw.id}:decode"] = p.decode.tok_s
            out[f"hw:{hw.id}:prefill"] = p.prefill.tok_s
        except Exception as e:          # a device the model does not fit: the message is the answer
            out[f"hw:{hw.id}:predict"] = type(e).__name__ + ": " + str(e)
    for r in load_rows():
        cls = [fp32_lanes_per_core(r.hw), mmq_unit(r.hw, 16), mmq_unit(r.hw, 512), has_tensor_cores(r.hw),
               memory_class(r.hw), r.family]
        out[f"row:{r.id}:class"] = cls
        if not r.skip:
            out[f"row:{r.id}"] = predicted_tok_s(r)
    return out


def compare(before: dict, after: dict) -> int:
    worst, worst_key, differ = 0.0, "", []
    added = sorted(set(after) - set(before))
    for k in sorted(set(before)):
        a, b = before.get(k), after.get(k)
        if isinstance(a, float) and isinstance(b, float) and a and b and math.isfinite(a) and math.isfinite(b):
            rel = abs(b / a - 1)
            if rel > worst:
                worst, worst_key = rel, k
            if rel > 1e-12:
                differ.append(f"{k}: {a!r} -> {b!r} ({rel:.3g})")
        elif a != b:
            differ.append(f"{k}: {a!r} -> {b!r}")
    print(f"{len(before)} keys before, {len(after)} after; largest relative change {worst:.3g} ({worst_key or '-'})")
    print(f"{len(differ)} keys differ; {len(added)} new keys (devices added since): "
          + ", ".join(sorted({k.split(':')[1] for k in added})))
    for line in differ[:200]:
        print("  " + line)
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "snapshot":
        with open(argv[1], "w") as f:
            json.dump(snapshot(), f, indent=0, sort_keys=True)
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        with open(argv[1]) as f, open(argv[2]) as g:
            return compare(json.load(f), json.load(g))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
