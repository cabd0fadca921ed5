"""Sections b and c of ``bench_aiconfigurator.py`` and the results document.

b. issue 28's questions: Llama-3.1-70B FP8 on 8 x H200 (ISL 4000 / OSL 500, TTFT <= 1 s, TPOT <= 50 ms);
   DeepSeek-V3 on 8 x H200 at TPOT <= 50 ms (ISL/OSL 1000, SGLang, FP8 KV); Llama-3.1-8B FP8 on one H100 / H200
   at TensorRT-LLM's perf-overview ISL/OSL pairs (max throughput). tokspeed answers through ``tokspeed serve
   --json`` (a search, or ``--offline`` for one layout); AIConfigurator through ``cli default`` (its agg vs
   disagg search), ``slo_best`` (one layout up its batch ladder) or ``max_throughput`` (the driver's doc).
c. single stream and static batches (Llama-3.1-8B BF16, one H100, ISL/OSL 1000): tokspeed ``serve
   --concurrency B --requests B`` (one wave of B requests), AIConfigurator ``estimate --estimate-mode static``.
"""

from __future__ import annotations

import datetime
import platform
import subprocess

from aiconfigurator_rows import (BACKENDS, err, engine_limits, num, pct, row_lines, run_rows,
                                 summary_lines)

PAIRS = ((128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (1000, 2000), (1024, 2048),
         (2048, 128), (2048, 2048), (5000, 500), (20000, 2000))      # TensorRT-LLM perf-overview ISL/OSL
STATIC_BATCHES = (1, 8, 32, 128)
NO_TTFT_SLO = 1e6      # AIConfigurator always filters on TTFT (default 2 s): a limit no answer reaches

Q70 = {"model": "llama-3.1-70b", "aic_model": "nvidia/Llama-3.1-70B-Instruct-FP8", "engine": "tensorrt-llm",
       "isl": 4000, "osl": 500, "ttft": 1000.0, "tpot": 50.0, "quant": "FP8"}
QDS = {"model": "deepseek-v3", "aic_model": "deepseek-ai/DeepSeek-V3", "engine": "sglang",
       "isl": 1000, "osl": 1000, "ttft": None, "tpot": 50.0, "quant": "FP8"}
QDS_LONG = {**QDS, "isl": 4000, "osl": 500, "ttft": 2000.0}      # the 70B question's lengths, AIC's default TTFT


def layout_text(lay: dict) -> str:
    from tokspeed.serving.document import layout_text as text

    return text(lay)


def _serve_argv(q: dict, hardware: str, gpus: int) -> list[str]:
    argv = [q["model"], "--hardware", hardware, "--gpus", str(gpus), "--engine", q["engine"], "--quant", q["quant"],
            "--kv-dtype", "fp8", "--isl", str(q["isl"]), "--osl", str(q["osl"]), "--slo-tpot-ms", str(q["tpot"])]
    return argv + (["--slo-ttft-ms", str(q["ttft"])] if q["ttft"] else [])


def _best(configs: list, pred) -> dict | None:
    return next((c for c in configs if c["meets_slo"] and pred(c["layout"])), None)


def _ts_cell(c: dict | None) -> str:
    if c is None:
        return "none meets the SLOs"
    return (f"{num(c['output_tok_s_per_gpu'])} ({layout_text(c['layout'])}, {c['concurrency']} in flight; "
            f"TTFT {num(c['ttft_ms']['p50'])} ms, TPOT {num(c['tpot_ms']['p50'], 1)} ms)")


def _aic_cell(row: dict | None, disagg: bool) -> str:
    if not row:
        return "none meets the SLOs"
    if disagg:
        lay = (f"disagg {row['(p)workers']}x{row['(p)parallel']} prefill + {row['(d)workers']}x{row['(d)parallel']} "
               f"decode, decode batch {row['(d)bs']}")
    else:
        lay = f"{row['parallel']}, batch {row['bs']}"
    return (f"{num(row['tokens/s/gpu_cluster'])} ({lay}; TTFT {num(row['ttft'])} ms, "
            f"TPOT {num(row['tpot'], 1)} ms)")


def _aic_mode(ans: dict, prefix: str) -> dict | None:
    rows = [r for m, rs in ans.get("modes", {}).items() if m.startswith(prefix) for r in rs]
    return max(rows, key=lambda r: r["tokens/s/gpu_cluster"] or 0, default=None)


def _search_question(aic, serve, q: dict, extra_aic: list) -> list[str]:
    """A search asked of both tools: markdown lines."""
    doc, ts_wall = serve(_serve_argv(q, "h200-sxm", 8))
    cfgs = doc["configs"]
    ts_any = _best(cfgs, lambda lay: True)
    ts_agg = _best(cfgs, lambda lay: lay["disagg"] is None)
    ts_dis = _best(cfgs, lambda lay: lay["disagg"] is not None)
    kw = {"model_path": q["aic_model"], "total_gpus": 8, "system": "h200_sxm", "backend": BACKENDS[q["engine"]],
          "isl": q["isl"], "osl": q["osl"], "ttft": q["ttft"] or NO_TTFT_SLO, "tpot": q["tpot"], "top_n": 3}
    ans, *extra = aic.ask([{"fn": "default", "kw": kw}] + [e[2] for e in extra_aic])
    if "error" in ans:
        aic_agg = aic_dis = None
        aic_note = f"AIConfigurator: {ans['error']}"
    else:
        aic_agg, aic_dis, aic_note = _aic_mode(ans, "agg"), _aic_mode(ans, "disagg"), ""
    dis_wins = (aic_dis or {}).get("tokens/s/gpu_cluster", 0) > (aic_agg or {}).get("tokens/s/gpu_cluster", 0)
    lines = ["| | tokspeed | AIConfigurator |", "|---|---|---|",
             f"| best, any layout | {_ts_cell(ts_any)} | {_aic_cell(aic_dis if dis_wins else aic_agg, dis_wins)} |",
             f"| best aggregated | {_ts_cell(ts_agg)} | {_aic_cell(aic_agg, False)} |",
             f"| best disaggregated | {_ts_cell(ts_dis)} | {_aic_cell(aic_dis, True)} |"]
    for (label, pred, _), a in zip(extra_aic, extra):
        cell = (f"{num(a['tok_s_per_gpu'])} (batch {a['bs']}; TTFT {num(a['ttft_ms'])} ms, TPOT "
                f"{num(a['tpot_ms'], 1)} ms)") if "error" not in a else a["error"]
        lines.append(f"| {label} | {_ts_cell(_best(cfgs, pred))} | {cell} |")
    if aic_agg and "parallel" in aic_agg:
        lines.append(_recheck(aic, q, aic_agg))
    lines.append(f"| search wall time | {ts_wall:.1f} s ({len(cfgs)} layouts) | "
                 f"{num(ans.get('wall_s'), 1)} s |")
    if aic_note:
        lines.append(f"\n{aic_note}")
    return lines


def _recheck(aic, q: dict, row: dict) -> str:
    """AIConfigurator's single-point estimate of the layout and batch its search picked (agg)."""
    import re

    from aiconfigurator_rows import quant_kw

    m = re.fullmatch(r"tp(\d+)pp(\d+)dp(\d+)etp(\d+)ep(\d+)", row["parallel"] or "")
    if m is None:
        return f"| AIC estimate at its search's pick | – | layout {row['parallel']!r} not parsed |"
    tp, pp, dp, etp, ep = map(int, m.groups())
    kw = {"model_path": q["aic_model"], "system_name": "h200_sxm", "backend_name": BACKENDS[q["engine"]],
          "isl": q["isl"], "osl": q["osl"], "tp_size": tp, "pp_size": pp, "attention_dp_size": dp,
          "batch_size": int(row["bs"])}
    if ep > 1 or etp > 1:
        kw.update(moe_tp_size=etp, moe_ep_size=ep, **quant_kw(q["model"], q["quant"], "fp8"))
    a = aic.ask([{"fn": "estimate", "kw": kw}])[0]
    cell = a.get("error") or (f"{num(a['tok_s_per_gpu'])} (batch {a['bs']}; TTFT {num(a['ttft_ms'])} ms, TPOT "
                              f"{num(a['tpot_ms'], 1)} ms)")
    return f"| AIC `estimate` at its search's agg pick ({row['parallel']}, batch {row['bs']}) | – | {cell} |"


def _ds_layouts(q: dict) -> list:
    """The DeepSeek-V3 layouts the issue names, each asked of AIConfigurator up its batch ladder."""
    from aiconfigurator_rows import quant_kw

    max_bs, ctx = engine_limits("sglang", q["isl"])
    out = []
    for label, tp, dp in (("TP8 + EP8", 8, 1), ("attention-DP8 + EP8", 1, 8)):
        kw = {"model_path": q["aic_model"], "system_name": "h200_sxm", "backend_name": "sglang", "isl": q["isl"],
              "osl": q["osl"], "tp_size": tp, "attention_dp_size": dp, "moe_ep_size": 8,
              **quant_kw("deepseek-v3", "FP8", "fp8")}
        def pick(lay, tp=tp, dp=dp):
            return not lay["disagg"] and lay["tp"] == tp and lay["dp"] == dp and lay["ep"] == 8

        out.append((label, pick,
                    {"fn": "slo_best", "kw": kw, "max_bs": max_bs, "ctx_options": ctx, "tpot_ms": q["tpot"],
                     "ttft_ms": q["ttft"]}))
    return out


def max_throughput_table(aic, serve) -> list[str]:
    from aiconfigurator_rows import quant_kw

    points = []
    for hw, system in (("h100-sxm", "h100_sxm"), ("h200-sxm", "h200_sxm")):
        for isl, osl in PAIRS:
            max_bs, ctx = engine_limits("tensorrt-llm", isl)
            kw = {"model_path": "meta-llama/Meta-Llama-3.1-8B", "system_name": system, "backend_name": "trtllm",
                  "isl": isl, "osl": osl, "tp_size": 1, **quant_kw("llama-3.1-8b", "FP8", "fp8")}
            points.append((hw, isl, osl, {"fn": "max_throughput", "kw": kw, "max_bs": max_bs, "ctx_options": ctx}))
    answers = aic.ask([p[3] for p in points])          # one driver run for the table
    out = ["| device | ISL/OSL | tokspeed tok/s/GPU | (concurrency) | AIConfigurator | (batch) | tokspeed / AIC |",
           "|---|---|---|---|---|---|---|"]
    ratios = []
    for (hw, isl, osl, _), a in zip(points, answers):
        doc, _ = serve(["llama-3.1-8b", "--hardware", hw, "--gpus", "1", "--engine", "tensorrt-llm", "--quant",
                        "FP8", "--kv-dtype", "fp8", "--isl", str(isl), "--osl", str(osl), "--offline",
                        "--parallel", "tp=1"])
        c = doc["configs"][0]
        ai = a.get("tok_s_per_gpu")
        r = err(c["output_tok_s_per_gpu"], ai)
        if r is not None:
            ratios.append(r)
        out.append(f"| {hw} | {isl}/{osl} | {num(c['output_tok_s_per_gpu'])} | {c['concurrency']} | "
                   f"{num(ai) if ai else a.get('error', '–')} | {a.get('bs', '–')} | {pct(r)} |")
    med = sorted(abs(x) for x in ratios)[len(ratios) // 2] if ratios else None
    out.append(f"\nMedian |tokspeed / AIConfigurator - 1| over the {len(ratios)} points: {pct(med)}.")
    return out


def static_table(aic, serve) -> list[str]:
    points = []
    for engine in ("tensorrt-llm", "sglang", "vllm"):
        for b in STATIC_BATCHES:
            kw = {"model_path": "meta-llama/Meta-Llama-3.1-8B", "system_name": "h100_sxm",
                  "backend_name": BACKENDS[engine], "isl": 1000, "osl": 1000, "tp_size": 1, "batch_size": b,
                  "mode": "static", "gemm_quant_mode": "bfloat16", "kvcache_quant_mode": "bfloat16"}
            points.append((engine, b, {"fn": "estimate", "kw": kw}))
    answers = aic.ask([p[2] for p in points])
    out = ["| engine | batch | tokspeed TPOT ms | AIC TPOT ms | tokspeed / AIC | tokspeed TTFT p99 ms | AIC TTFT ms | "
           "tokspeed / AIC |", "|---|---|---|---|---|---|---|---|"]
    for (engine, b, _), a in zip(points, answers):
        doc, _ = serve(["llama-3.1-8b", "--hardware", "h100-sxm", "--gpus", "1", "--engine", engine, "--quant",
                        "F16", "--isl", "1000", "--osl", "1000", "--concurrency", str(b), "--requests", str(b),
                        "--parallel", "tp=1"])
        c = doc["configs"][0]
        tt, at_ = c["tpot_ms"]["p50"], a.get("tpot_ms")
        tf, af = c["ttft_ms"]["p99"], a.get("ttft_ms")      # the batch's last prompt: AIC's static TTFT
        out.append(f"| {engine} | {b} | {num(tt, 2)} | {num(at_, 2) if at_ else a.get('error', '–')} | "
                   f"{pct(err(tt, at_))} | {num(tf, 1)} | {num(af, 1)} | {pct(err(tf, af))} |")
    return out


def _versions(aic) -> str:
    v = aic.ask([{"fn": "version"}])[0].get("version", "?")
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except OSError:
        rev = "?"
    return (f"tokspeed {rev} (git), AIConfigurator {v} (its own venv: `{aic.python}`), "
            f"Python {platform.python_version()}")


def report(aic, serve) -> str:
    """The results document (without the cache block)."""
    a = run_rows(aic)
    h = run_rows(aic, held_out=True)
    rows = a["rows"]
    dbs = sorted({f"{r['q']['kw']['system_name']}/{r['q']['kw']['backend_name']} "
                  f"{r['aic_raw'].get('backend_version')}" for r in rows if r["aic_raw"].get("backend_version")})
    l70 = _search_question(aic, serve, Q70, [])
    lds = _search_question(aic, serve, QDS, _ds_layouts(QDS))
    lds_long = _search_question(aic, serve, QDS_LONG, _ds_layouts(QDS_LONG))
    mt = max_throughput_table(aic, serve)
    st = static_table(aic, serve)
    aic_rows_s = sum(r["aic_raw"].get("wall_s") or 0 for r in rows)
    answered = sum(1 for r in rows if r["aic"] and r["tokspeed"])
    skipped = "; ".join(f"{k}: {v}" for k, v in sorted(a["skipped"].items()))
    failed = {}
    for r in rows:
        if r["aic"] is None:
            why = r["aic_raw"].get("error", "no answer")[:90]
            failed[why] = failed.get(why, 0) + 1
    lines = [
        "# tokspeed and AIConfigurator, side by side",
        "",
        f"Made by `PYTHONPATH=. python3 benchmarks/bench_aiconfigurator.py` on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. {_versions(aic)}.",
        f"AIConfigurator's perf databases used: {', '.join(dbs) or '?'} (SILICON mode, its default).",
        "AIConfigurator is called through its Python API in its own interpreter "
        "(`benchmarks/aiconfigurator_driver.py`); its answers are cached at the end of this file.",
        "",
        "## a. Held out: the newer public rows (forward in time)",
        "",
        f"{len(h['rows'])} rows of `data/validation/serving-calibration-2.csv` (vLLM 0.11.2 / 0.13.0 and SGLang 0.5.6, "
        "Dec 2025 - Jan 2026) map to AIConfigurator's systems, backends and models. tokspeed's side takes the "
        "constants fitted on `serving-calibration.csv` alone (`serving.fitted.forward_for`): these rows are held out "
        "from it. Neither tool was fitted on them.",
        "",
        *summary_lines(h["rows"]),
        "",
        "Rows left out: " + "; ".join(f"{k}: {v}" for k, v in sorted(h["skipped"].items())) + ".",
        "",
        "## a2. In sample: the older public serving rows both tools answer",
        "",
        f"{len(rows)} rows of `data/validation/serving-calibration.csv` map to AIConfigurator's systems, backends "
        f"and models; both tools answered {answered}. tokspeed's side is `tokspeed.serving.rows.evaluate_case` "
        "with the committed fitted constants: **in-sample** (those constants were fitted on these rows; the "
        "held-out errors are in docs/serving.md). AIConfigurator was not fitted on them. Errors are "
        "|predicted / measured - 1|, on the rows where both answered and the row measured the metric.",
        "",
        *summary_lines(rows),
        "",
        f"Rows left out: {skipped}.",
        "AIConfigurator gave no answer: " + ("; ".join(f"{k} ({v})" for k, v in failed.items()) or "none") + ".",
        f"Wall time: tokspeed {a['tokspeed_s']:.1f} s for the {len(rows)} rows; AIConfigurator "
        f"{aic_rows_s:.1f} s (summed over its answers when they were asked).",
        "",
        "## b. Issue 28's questions",
        "",
        "### Llama-3.1-70B FP8 on 8 x H200, ISL 4000 / OSL 500, TTFT <= 1 s, TPOT <= 50 ms (TensorRT-LLM)",
        "",
        *l70,
        "",
        "### DeepSeek-V3 on 8 x H200 at TPOT <= 50 ms (SGLang, ISL/OSL 1000, FP8 KV, no TTFT limit)",
        "",
        *lds,
        "",
        "The last AIConfigurator rows are `cli estimate` points: the best within the SLO up the batch ladder of one "
        "layout, and its estimate at the layout and batch its own search picked (where the two disagree, the search "
        "and the single-point estimate of AIConfigurator model the same configuration differently).",
        "",
        "The same at the 70B question's lengths (ISL 4000 / OSL 500) with TTFT <= 2 s (AIConfigurator's default "
        "TTFT limit):",
        "",
        *lds_long,
        "",
        "### Llama-3.1-8B FP8, one GPU, max throughput at TensorRT-LLM's perf-overview ISL/OSL pairs",
        "",
        "tokspeed: `serve --offline --parallel tp=1` (1,000 requests queued at once); AIConfigurator: its best agg "
        "point up the batch ladder within its KV check. TensorRT-LLM's published measured figures for these pairs "
        "are **not in our data** (the shared CSV's sources left those columns out), so neither tool is scored here.",
        "",
        *mt,
        "",
        "## c. Single stream and static batches (Llama-3.1-8B BF16, one H100 SXM, ISL/OSL 1000)",
        "",
        "tokspeed: `serve --concurrency B --requests B` (one wave); AIConfigurator: `estimate --estimate-mode "
        "static` at batch B. TTFT: AIConfigurator's static TTFT is the prefill of all B prompts in one pass; "
        "tokspeed's p99 is the last of the B prompts under the engine's chunked prefill (token budget 8,192).",
        "",
        *st,
        "",
        "## Commands",
        "",
        "- tokspeed: `tokspeed serve MODEL --hardware DEV --gpus N --engine E --quant Q --kv-dtype fp8 --isl I --osl O "
        "[--slo-ttft-ms T] --slo-tpot-ms P --json` (b), `... --offline --parallel tp=1` (b, 8B), `... --concurrency B "
        "--requests B` (c), `tokspeed.serving.rows.evaluate_case` (a);",
        "- AIConfigurator (Python API of `aiconfigurator cli`): `cli_default` = `aiconfigurator cli default "
        "--model-path M --total-gpus 8 --system h200_sxm --backend B --isl I --osl O --ttft T --tpot P`; "
        "`cli_estimate` = `aiconfigurator cli estimate ... --batch-size B --tp-size T "
        "[--attention-dp-size D --moe-ep-size E] [--ctx-tokens C] [--estimate-mode static]`.",
        "",
    ]
    return "\n".join(lines) + "\n## Every row\n\n" + "\n".join(row_lines(rows)) + "\n"
