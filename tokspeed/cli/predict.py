"""`tokspeed predict MODEL --hardware HW`: memory budget, bytes per token, decode/prefill speed, TTFT."""

from __future__ import annotations

from ..errors import UserError
from ..plots.verbs import plot_prediction
from ..predict import predict
from ..report.console import make_console
from ..report.predict_table import render_prediction, render_ways
from ..report.scale_table import render_scale
from ..report.text import say
from ..serving_api import max_batch
from .options import (
    add_plot_option, add_predict_options, check_plot, note_driver, predict_kwargs, print_json, resolve_hardware,
)


def add_parser(sub):
    p = sub.add_parser("predict", help="predict memory, decode and prefill speed for a model on hardware",
                       description="Predict the memory budget (does it fit), bytes read per token, decode tok/s "
                                   "(bound and expected), prefill tok/s and time to first token.")
    p.add_argument("model", help="catalog id, config.json, Hugging Face folder, .gguf file or ollama:NAME[:TAG]")
    add_predict_options(p, batch_max=True)
    add_plot_option(p)
    return p


def run(args) -> int:
    check_plot(args)
    hw = resolve_hardware(args)
    kwargs = predict_kwargs(args)
    if kwargs["batch"] == "max":          # the engine's largest batch (tokspeed.serving.batch)

        mb = max_batch(args.model, hw, kwargs["context"] + kwargs["prompt"] + kwargs["gen"],
                       **{k: kwargs[k] for k in ("quant", "kv_dtype", "engine", "gpus", "parallel")},
                       engine_version=kwargs.get("engine_version"), flash_attention=kwargs.get("flash_attention"))
        if mb["batch"] < 1:
            raise UserError(f"no sequence of {kwargs['context'] + kwargs['prompt'] + kwargs['gen']} tokens fits the "
                            "KV cache left after the weights", "use fewer tokens, more GPUs or a smaller --quant")
        kwargs["batch"] = mb["batch"]
        say(f"batch max = {mb['batch']:,} (limited by the {mb['limit']}: KV pool {mb['kv_pool_tokens']:,.0f} tokens, "
            f"max sequences {mb['max_seqs']:,})")
    pred = predict(args.model, hw, **kwargs)
    note_driver(pred.driver, pred.driver_assumed)
    for note in pred.warnings:      # e.g. a context past the trained window: numbers follow, flagged
        say(note, "warning")
    if args.json:
        print_json(pred.to_dict())
    else:
        con = make_console()
        render_prediction(pred, con)
        render_scale(pred, con)
        render_ways(con, pred, args.model, **kwargs)
    if args.plot:
        plot_prediction(pred, args.plot)
    return 0
