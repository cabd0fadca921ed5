"""`tokspeed report MODEL --hardware HW [predict options] -o FILE.html`: one self-contained HTML report."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UserError
from ..extras import require
from ..guard.outputs import check_output, write_file
from ..report.html import render_report
from .options import (
    add_engine_build_options, add_hardware_options, add_model_options, add_run_options, engine_build_kwargs,
    positive_int, resolve_hardware,
)


def add_parser(sub):
    p = sub.add_parser("report", help="write a self-contained HTML report (tables, charts, explanation)",
                       description="Predict, explain one token and draw the charts into one HTML file with inline "
                                   "SVG: no scripts, no network, opens offline.")
    p.add_argument("model", help="catalog id, config.json, Hugging Face folder, .gguf file or ollama:NAME[:TAG]")
    add_hardware_options(p)
    add_model_options(p)
    add_engine_build_options(p)
    add_run_options(p)
    p.add_argument("--gpus", type=positive_int, default=1,
                   help="with N > 1: a serving section, the `serve` layout search of N devices and its frontier "
                        "(--prompt and --gen as ISL and OSL; default 1: none)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html", help="where to write the report")
    return p


def run(args) -> int:

    require("plot", "matplotlib", what="report")

    out = Path(args.output)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"the report is HTML: name it FILE.html, not {args.output!r}")
    if not out.parent.exists():
        raise UserError(f"folder {out.parent} does not exist")

    check_output(out, "report")
    if args.batch < 1:
        raise UserError("--batch must be at least 1")
    hw = resolve_hardware(args)
    text = render_report(args.model, hw, quant=args.quant, kv_dtype=args.kv_dtype, engine=args.engine,
                         prompt=args.prompt, gen=args.gen, context=args.context, batch=args.batch, gpus=args.gpus,
                         **engine_build_kwargs(args))
    write_file(out, text, "report")
    sys.stderr.write(f"wrote {out} ({len(text.encode()) / 1e3:.0f} kB)\n")
    return 0
