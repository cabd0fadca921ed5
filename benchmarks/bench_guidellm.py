"""`tokspeed bench-server` and guidellm side by side against the same llama.cpp `llama-server` (issue #15).

Not a test: the numbers depend on the machine. Starts llama.cpp's own `llama-server` (built and cached by
scripts/build_llama_server.sh) on 127.0.0.1 with 4 parallel slots and continuous batching, serving the
random-weight tiny GGUF of tests/serverbench_gguf.py (every generated token is one printable character,
EOS never comes). Then, for each concurrency level, runs tokspeed and guidellm one after the other with
the same load: the same number of requests, prompt and output token counts, `/v1/completions`,
streaming, `ignore_eos`. Prints output tok/s, request/s, TTFT p50/p90, ITL p50 and TPOT p50 of both, with
the ratio tokspeed/guidellm, and the prompt tokens the server reported for each tool's prompts.

guidellm is NOT a tokspeed dependency: install it into a separate virtual environment and point
GUIDELLM at its executable (default /tmp/gl-venv/bin/guidellm):

    python3 -m venv /tmp/gl-venv
    /tmp/gl-venv/bin/pip install torch==2.13.0 guidellm      # a CPU torch first, then guidellm 0.8.1
    HF_HUB_OFFLINE=1 python benchmarks/bench_guidellm.py [--levels 1,2,4] [--requests 48]  # ~2 min, 2 cores

guidellm needs a Hugging Face tokenizer to cut its synthetic prompts (faker text) to a token count; the
hub is not reachable, so this script writes one (tokenizer.json, with the `tokenizers` package) that
counts like the GGUF's byte-level SPM vocabulary: the text gets a leading "▁" and every space becomes
"▁" (3 UTF-8 bytes, 3 tokens), every other byte is one token, plus BOS. See _write_hf_tokenizer.
tokspeed gets the GGUF itself as --tokenizer. Results go to benchmarks/RESULTS_guidellm.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = ROOT / "benchmarks" / "RESULTS_guidellm.md"
SLOTS = 4
# the 3 bytes of "▁" (U+2581) as 3 private-use characters: one token each, as the server's byte tokens
SPACE3 = "\ue000\ue001\ue002"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _llama_server() -> Path:
    if os.environ.get("TOKSPEED_LLAMA_SERVER"):
        return Path(os.environ["TOKSPEED_LLAMA_SERVER"])
    version = importlib.metadata.version("llama-cpp-python")
    p = Path(os.environ.get("TOKSPEED_CACHE") or Path.home() / ".cache" / "tokspeed") / f"llama-server-{version}"
    if not (p / "llama-server").is_file():
        sys.exit(f"no llama-server in {p}: run scripts/build_llama_server.sh")
    return p / "llama-server"


def _write_hf_tokenizer(d: Path) -> Path:
    """A tokenizer.json whose counts equal llama-server's for the tiny GGUF (1 BOS + the UTF-8 bytes of
    "▁" + text with spaces as "▁"). Printable ASCII characters are ordinary tokens and a space is three
    private-use characters (three tokens), so that guidellm, which decodes the first N token ids of its
    faker text, never gets a run of byte tokens cut mid-character (a byte-fallback decoder turns a whole
    such run into U+FFFD, 3 bytes each on the server). A cut inside a space's three tokens drops that
    space: the server then counts 1 or 2 tokens fewer than the target."""
    from tokenizers import Tokenizer, decoders, models, normalizers, processors

    from serverbench_gguf import VOCAB

    vocab = {t: i for i, t in enumerate(VOCAB)}
    for ch in [chr(c) for c in range(0x21, 0x7F)] + list(SPACE3):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(" "), normalizers.Replace(" ", SPACE3)])
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Replace(SPACE3, " "),
                                     *[decoders.Replace(c, "") for c in SPACE3], decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    d.mkdir(parents=True, exist_ok=True)
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "model_max_length": 512}))
    return d


def _start_server(d: Path) -> tuple[subprocess.Popen, str, Path]:
    from serverbench_gguf import write_tiny_llama

    model = write_tiny_llama(d / "tiny.gguf")
    port = _free_port()
    log = open(d / "server.log", "wb")
    proc = subprocess.Popen([str(_llama_server()), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                             "-np", str(SLOTS), "--cont-batching", "-c", str(SLOTS * 256), "-t", "2",
                             "--metrics", "--no-webui"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("llama-server exited: " + (d / "server.log").read_text()[-2000:])
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url, model
        except OSError:
            pass
        time.sleep(0.3)
    proc.kill()
    sys.exit("llama-server did not come up in 120 s")


def _exact_prompts(d: Path, c: int, a) -> Path:
    """A JSONL of a.requests prompts, each exactly a.prompt_tokens as llama-server counts them for the tiny
    GGUF: tokspeed's own synthetic words (make_prompt) cut with its cut_to_tokens and the GGUF's counting
    rule; a text whose exact length cannot be hit (the target falls inside a space, 3 tokens) is skipped
    for the next one. Not `--prompt-tokens N --tokenizer tiny.gguf`: on such a miss tokspeed falls back to
    an uncut prompt of N words (~6 tokens each), which overflows the slot's context (see RESULTS)."""
    import random

    from serverbench_gguf import expected_prompt_tokens
    from tokspeed.serverbench.workload import cut_to_tokens, make_prompt

    rng = random.Random(c)
    prompts, i = [], 0
    while len(prompts) < a.requests:
        cut = cut_to_tokens(make_prompt(i, 2 * a.prompt_tokens, rng), a.prompt_tokens, expected_prompt_tokens)
        if cut is not None:
            prompts.append(cut)
        i += 1
    path = d / f"prompts-c{c}.jsonl"
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    return path


def _tokspeed(url: str, model: Path, c: int, a, out: Path) -> dict:
    out = out / f"tokspeed-c{c}"
    cmd = [sys.executable, "-m", "tokspeed", "bench-server", url, "--model", "tiny", "--concurrency", str(c),
           "--requests", str(a.requests), "--warmup", "0", "--prompts", str(_exact_prompts(model.parent, c, a)),
           "--max-tokens", str(a.output_tokens), "--ignore-eos", "--no-report", "--quiet", "-o", str(out)]
    subprocess.run(cmd, check=True, cwd=ROOT, timeout=600, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    ph = json.loads((out / "summary.json").read_text())["phases"][0]
    st = ph["stats"]
    return {"ok": ph["ok"], "failed": ph["failed"], "output_tok_s": ph["output_tok_s"], "request_rps": ph["request_rps"],
            "ttft_p50": st["ttft_s"]["p50"] * 1e3, "ttft_p90": st["ttft_s"]["p90"] * 1e3,
            "itl_p50": st["itl_s"]["p50"] * 1e3, "tpot_p50": st["tpot_s"]["p50"] * 1e3,
            "start_to_last_p50": _median_start_to_last_ms(out),
            "prompt_tokens": st["prompt_tokens"]["mean"], "output_tokens": st["output_tokens"]["mean"],
            "concurrency": ph["ok"] * st["e2e_s"]["mean"] / ph["wall_s"],
            "server_tpot_p50": 1e3 / st["server_decode_tok_s"]["p50"]}


def _median_start_to_last_ms(out: Path) -> float:
    """guidellm's TPOT, worked out from tokspeed's records: (send -> last token) / output tokens, p50."""
    import statistics

    recs = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    return statistics.median(1e3 * (r["ttft_s"] + r["decode_s"]) / r["output_tokens"]
                             for r in recs if r.get("type") == "request" and r.get("ok"))


def _guidellm(url: str, tok: Path, c: int, a, out: Path) -> dict:
    path = out / f"guidellm-c{c}.json"
    cmd = [a.guidellm, "run",
           "--backend", f"kind=openai_http,target={url},model=tiny,request_format=/v1/completions",
           "--profile", f"kind=concurrent,streams={c}",
           "--constraint", f"kind=max_requests,count={a.requests}",
           "--tokenizer", f"kind=hf_auto,model={tok}",
           "--data", f"kind=synthetic_text,prompt_tokens={a.prompt_tokens},output_tokens={a.output_tokens}",
           "--output", f"kind=json,path={path}", "--disable-console"]
    subprocess.run(cmd, check=True, timeout=600, stdout=subprocess.DEVNULL,
                   env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    b = json.loads(path.read_text())["benchmarks"][0]
    m = b["metrics"]

    def s(name, key="percentiles", p="p50"):
        v = m[name]["successful"]
        return v[key][p] if key == "percentiles" else v[key]

    totals = m["request_totals"]
    return {"ok": totals["successful"], "failed": totals["errored"] + totals["incomplete"],
            "output_tok_s": s("output_tokens_per_second", "mean"), "request_rps": s("requests_per_second", "mean"),
            "ttft_p50": s("time_to_first_token_ms"), "ttft_p90": s("time_to_first_token_ms", p="p90"),
            "tpot_p50": s("inter_token_latency_ms"), "start_to_last_p50": s("time_per_output_token_ms"),
            "prompt_tokens": s("prompt_token_count", "mean"), "output_tokens": s("output_token_count", "mean"),
            "concurrency": s("request_concurrency", "mean")}


# the same definition on both sides (see RESULTS_guidellm.md): tokspeed's TPOT is guidellm's ITL, and
# guidellm's TPOT (send -> last token, / output tokens) is worked out from tokspeed's records
COLS = [("output_tok_s", "output tok/s"), ("request_rps", "requests/s"), ("ttft_p50", "TTFT p50 ms"),
        ("ttft_p90", "TTFT p90 ms"),
        ("tpot_p50", "(last - first token) / (n - 1), p50 ms: tokspeed TPOT = guidellm ITL"),
        ("start_to_last_p50", "(send -> last token) / n, p50 ms: guidellm TPOT")]


def _table(rows: list[tuple[int, dict, dict]]) -> list[str]:
    head = "| c | metric | tokspeed | guidellm | tokspeed/guidellm |"
    lines = [head, "|---:|---|---:|---:|---:|"]
    for c, t, g in rows:
        for key, label in COLS:
            ratio = t[key] / g[key] if g[key] else float("nan")
            lines.append(f"| {c} | {label} | {t[key]:.4g} | {g[key]:.4g} | {ratio:.2f} |")
        lines.append(f"| {c} | pooled inter-token gap p50 ms (tokspeed ITL; guidellm has none) | {t['itl_p50']:.3g} | | |")
        lines.append(f"| {c} | requests in flight, mean | {t['concurrency']:.2f} | {g['concurrency']:.2f} | |")
        lines.append(f"| {c} | server's own time per token p50 ms (llama.cpp timings) | {t['server_tpot_p50']:.3g} | | |")
        lines.append(f"| {c} | ok / failed | {t['ok']}/{t['failed']} | {g['ok']}/{g['failed']} | |")
        lines.append(f"| {c} | prompt / output tokens (server) | {t['prompt_tokens']:.1f} / {t['output_tokens']:.1f} "
                     f"| {g['prompt_tokens']:.1f} / {g['output_tokens']:.1f} | |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2,4")
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--guidellm", default=os.environ.get("GUIDELLM", "/tmp/gl-venv/bin/guidellm"))
    ap.add_argument("--guidellm-first", action="store_true", help="at each level run guidellm before tokspeed")
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS_guidellm.md alone")
    a = ap.parse_args()
    if not shutil.which(a.guidellm):
        sys.exit(f"no guidellm at {a.guidellm}: install it into a separate venv (see the docstring)")
    gl_version = subprocess.run([a.guidellm, "--version"], capture_output=True, text=True,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"}).stdout.strip()
    levels = [int(x) for x in a.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-guidellm-") as tmp:
        tmp = Path(tmp)
        tok = _write_hf_tokenizer(tmp / "hf-tokenizer")
        proc, url, model = _start_server(tmp)
        try:
            with urllib.request.urlopen(url + "/props", timeout=5) as r:
                build = json.load(r).get("build_info")
            rows = []
            for c in levels:   # same level back to back: tokspeed then guidellm (or the reverse)
                if a.guidellm_first:
                    g = _guidellm(url, tok, c, a, tmp)
                t = _tokspeed(url, model, c, a, tmp)
                if not a.guidellm_first:
                    g = _guidellm(url, tok, c, a, tmp)
                rows.append((c, t, g))
                print(f"c={c}: tokspeed {t['output_tok_s']:.0f} tok/s, guidellm {g['output_tok_s']:.0f} tok/s",
                      flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
    lines = _table(rows)
    print("\n".join(lines))
    if a.no_write:
        return
    facts = (f"Run {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.machine()} "
             f"({os.cpu_count()} CPUs): llama-server `{build}` (-np {SLOTS}, continuous batching), tiny random "
             f"GGUF; {gl_version or 'guidellm (version unknown)'}; tokspeed {importlib.metadata.version('tokspeed')} (this checkout); "
             f"{a.requests} requests per level, prompt {a.prompt_tokens} tokens, output {a.output_tokens} tokens, "
             f"`/v1/completions`, streaming, ignore_eos; at each level "
             f"{'guidellm ran first' if a.guidellm_first else 'tokspeed ran first'}.")
    text = RESULTS.read_text() if RESULTS.exists() else ""
    tag = "guidellm-first" if a.guidellm_first else "tokspeed-first"
    start, end = f"<!-- measured {tag}: start -->", f"<!-- measured {tag}: end -->"
    block = "\n".join([start, facts, "", *lines, end])
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text + "\n" + block + "\n"
    RESULTS.write_text(text)
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
