"""`tokspeed hardware [FILTER] [--kind K] [--links] [--json]`: the hardware catalog.

FILTER that names one device (id, full name or unambiguous alias) shows everything about it,
sources included; any other FILTER keeps the devices whose id, name, vendor or aliases contain it.
"""

from __future__ import annotations

from ..errors import UserError
from ..hardware.catalog import get_hardware, lookup_hardware
from ..hardware.devices import all_hardware
from ..hardware.links import all_links, get_link
from ..hardware.names import name_key
from ..report.console import make_console
from ..report.text import FitTable
from ..units import fmt_bytes
from .options import print_json

KINDS = ("gpu", "soc", "cpu", "accelerator")


def add_parser(sub):
    p = sub.add_parser("hardware", help="list the hardware catalog or show one device",
                       description="List the hardware catalog, filter it, or show one device with its sources.")
    p.add_argument("filter", nargs="?", help="a device id/alias (shows it), or text to filter by")
    p.add_argument("--kind", choices=KINDS, help="only this kind of device")
    p.add_argument("--links", action="store_true", help="list interconnects (PCIe, NVLink, ...) instead")
    p.add_argument("--json", action="store_true", help="JSON on stdout (with sources)")
    return p


def run(args) -> int:
    if args.links:
        return _links(args)
    if args.filter:
        try:
            hw, note = lookup_hardware(args.filter)
            hw = None if note else hw     # a shared or loosely written name: list what it matches
        except UserError:
            hw = None
        if hw is not None and (not args.kind or hw.kind == args.kind):
            return _one(hw, args.json)
    devices = [h for h in all_hardware() if not args.kind or h.kind == args.kind]
    if args.filter:
        key = name_key(args.filter)
        devices = [h for h in devices
                   if any(key in name_key(s) for s in (h.id, h.name, h.vendor, *h.aliases))]
        if not devices:
            get_hardware(args.filter)  # raises the unknown-name error with its did-you-mean hint
            raise UserError(f"no {args.kind} matches {args.filter!r}", "drop --kind or change the filter")
    if args.json:
        print_json([h.to_dict() for h in devices])
        return 0
    _table(devices)
    return 0


def _n(v) -> str:
    """'—' for unknown (0); thousands without decimals; smaller numbers with 4 significant digits."""
    if not v:
        return "—"
    return f"{v:,.0f}" if v >= 1000 else f"{v:.4g}"


def _table(devices) -> None:
    t = FitTable(title=f"{len(devices)} devices: vendor peaks. GiB = memory as labelled (a label's GB is GiB); "
                       "BW = memory GB/s; FP16/FP8 dense TFLOPS (FP32 accumulate); INT8 dense TOPS; "
                       "host = host link GB/s per direction; W = TDP; — = not published")
    for col, num, drop in (("id", False, 0), ("name", False, 1), ("kind", False, 4), ("GiB", True, 0), ("BW", True, 0),
                           ("FP16", True, 0), ("FP8", True, 3), ("INT8", True, 5), ("host", True, 2), ("W", True, 6)):
        t.column(col, numeric=num, drop=drop, min_width=14 if col == "name" else 8, whole=col == "id")
    for h in devices:
        t.row(h.id, h.name, h.kind, _n(h.memory_gb), _n(h.bandwidth_gbps), _n(h.fp16_tflops),
              _n(h.fp8_tflops), _n(h.int8_tops), _n(h.host_link_gbps), _n(h.tdp_w))
    t.print(make_console())


def _properties(hw) -> dict:
    """The Hardware properties the models use, under their Python names."""
    return {"usable_bytes": hw.usable_bytes, "ridge_flops_per_byte": hw.ridge_flops_per_byte,
            "scale_up_per_direction_bytes_s": hw.scale_up_per_direction_bytes_s}


def _one(hw, as_json: bool) -> int:
    d = hw.to_dict()
    d["properties"] = _properties(hw)
    if as_json:
        print_json(d)
        return 0

    t = FitTable(show_header=False, title=f"{hw.id}: {hw.name}")
    t.column("field", style="bold", min_width=20).column("value", min_width=30)
    for k, v in d.items():
        if k == "properties":
            for pk, pv in v.items():
                shown = fmt_bytes(pv) + ("/s" if pk.endswith("_s") else "") if "bytes" in pk else f"{pv:,.1f}"
                t.row(pk, shown if pv else "—")
            continue
        if isinstance(v, list):
            v = "\n".join(map(str, v)) if k == "derived" else ", ".join(map(str, v))
        t.row(k, str(v) if v not in ("", 0, 0.0, None) else "—")
    t.print(make_console())
    return 0


def _links(args) -> int:
    links = all_links()
    if args.filter:
        try:
            links = [get_link(args.filter)]
        except UserError:
            key = name_key(args.filter)
            links = [l for l in links if any(key in name_key(s) for s in (l.id, l.name, *l.aliases))]
            if not links:
                raise
    if args.json:
        print_json([l.to_dict() for l in links])
        return 0

    t = FitTable(title="interconnects (per direction = payload one way; vendors print the bidirectional sum)")
    for col in ("id", "name", "GB/s per direction", "GB/s bidirectional", "year"):
        t.column(col, numeric="GB" in col or col == "year", drop=1 if col == "year" else 0, whole=col == "id")
    for l in links:
        t.row(l.id, l.name, f"{l.per_direction_gbps:g}", f"{l.bidirectional_gbps:g}", str(l.release_year or "—"))
    t.print(make_console())
    return 0
