"""`tokspeed probe`: detect this machine and measure its real limits; write a hardware profile."""

from __future__ import annotations

from rich.table import Table

from ..errors import UserError
from ..guard.console import safe_console
from ..guard.escape import markup
from ..hardware.catalog import local_profile_path
from ..measure.detect import detect
from ..measure.probe_cpu import probe_cpu
from ..measure.probe_gpu import probe_gpu
from ..measure.profile import build_profile, write_profile
from ..measure.stats import instability_warning
from ..userfile import check_writable
from .options import count, print_json


def add_parser(sub):
    p = sub.add_parser("probe", help="measure this machine's memory bandwidth and FLOP/s; write a hardware profile",
                       description="Detect the CPU/GPU and measure read/copy/triad bandwidth and matvec/matmul "
                                   "throughput (warm-up, repeats, median, spread). Writes a hardware TOML usable "
                                   "as --hardware local or --hardware PROFILE.toml.")
    p.add_argument("-o", "--output", help="profile path (default: ~/.config/tokspeed/local.toml, "
                                          "or $TOKSPEED_LOCAL_PROFILE)")
    p.add_argument("--json", action="store_true", help="print the probe results as JSON on stdout")
    p.add_argument("--quick", action="store_true", help="smaller buffers and matrices (a few seconds)")
    p.add_argument("--repeats", type=count, default=5, help="timed repeats per probe (default 5)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="probe the CPU only, or the CUDA GPU too (auto: if one is present)")
    return p


def run(args) -> int:
    # every argument checked before torch is imported (seconds) and anything is measured
    if args.repeats < 3:
        raise UserError(f"--repeats must be at least 3 to give a median and a spread, got {args.repeats}")
    check_writable(args.output or local_profile_path(), "profile")
    try:
        import torch  # lazy: optional dependency (torch, the measure extra)
    except ImportError:
        raise UserError("`tokspeed probe` needs torch", "pip install 'tokspeed[measure]' (torch==2.13.0)") from None


    err = safe_console(stderr=True)
    machine = detect()
    err.print(f"[bold]{markup(machine.cpu_model)}[/] · {machine.physical_cores} cores · "
              f"{machine.ram_bytes / 1e9:.1f} GB RAM · torch threads {torch.get_num_threads()}"
              + "".join(f" · GPU {g.name}" for g in machine.gpus))
    use_gpu = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: torch sees no CUDA device", "use --device cpu")
    with err.status("probing CPU memory bandwidth and FLOP/s ..."):
        results = probe_cpu(args.quick, args.repeats, machine.available_ram_bytes)
    if use_gpu:
        with err.status("probing the GPU ..."):
            results += probe_gpu(args.quick, args.repeats)
    profile = build_profile(machine, results, torch.get_num_threads())
    path = write_profile(profile, args.output or local_profile_path())
    for r in results:
        w = instability_warning(r.name, r.timing)
        if w:
            err.print(f"[yellow]warning:[/] {markup(w)}")
    if args.json:
        out = {"profile_path": str(path), "machine": machine.to_dict(),
               "hardware": {k: v for k, v in profile.items() if not isinstance(v, dict)},
               "results": [r.to_dict() for r in results]}
        print_json(out)
    else:
        t = Table(title="Measured limits (median of repeats)")
        for col in ("probe", "median", "best", "unit", "spread", "what was counted"):
            t.add_column(col, justify="right" if col in ("median", "best", "spread") else "left",
                         no_wrap=col != "what was counted",      # a probe's name and a number stay whole
                         min_width=max(len(r.name) for r in results) if col == "probe" else None)
        for r in results:
            t.add_row(r.name, f"{r.value:,.2f}", f"{r.best:,.2f}", r.unit,
                      f"{r.timing.spread:.0%}" + (" !" if r.timing.unstable else ""), r.what)
        safe_console().print(t)
    use = "--hardware local" if path == local_profile_path().expanduser() else f"--hardware {path}"
    err.print(f"profile written to [bold]{markup(path)}[/] (use {markup(use)})")
    return 0
