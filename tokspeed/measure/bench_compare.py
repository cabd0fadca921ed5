"""A llama-bench run set beside tokspeed's predictions, and this machine's calibration from its decode tests.

Each test (``llama_bench.BenchRow``) is predicted as asked: the model from its file name (or the one given), the
weight format from its file type (``Q4_K - Medium`` is Q4_K_M), the backend from llama-bench's ``backends`` (CPU
where no layer is offloaded), the device from its ``gpu_info`` / ``cpu_info`` (or the one given), the build's era from
its build number, its prompt, generation, depth, ``-fa``, ``-ub`` / ``-b`` and, on the CPU backend, ``-t``. A prompt test compares with the prefill rate, a
generation test with the decode rate, a ``pp+tg`` test with both tokens over both times (as llama-bench counts it).

``calibrate``: the decode tests fit this machine's ``llama.cpp`` calibration (``calibrate.fit``: eta, eta_kv and a
per-step overhead against the profile's bandwidth, net of the engine model's attention traffic) and store it in the
hardware profile; every later llama.cpp prediction on that profile uses it, its band two of the fit's RMS errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..engines.compat import llama_bench_backends, runtime_of
from ..engines.cpu import with_threads
from ..engines.eras import release_build
from ..errors import UserError, reword
from ..hardware.catalog import get_hardware
from ..hardware.spec import Hardware
from ..models.catalog import resolve_id
from ..predict import predict
from ..quant.format_table import rows as format_rows
from ..quant.schemes import canonical
from .calibrate import fit, store_calibration
from .llama_bench import BenchRow
from .predicted import predict_point

CPU_BACKEND = "cpu"      # ggml-cpu's backend word: the one a test with -ngl 0 ran on
# llama_model_ftype_name's size words -> the K-quant suffix
SIZE_WORD = {"small": "S", "medium": "M", "large": "L", "extra small": "XS"}
# llama.cpp file types (the format table's rows with a LLAMA_FTYPE) not of the (I)Qn_ pattern: F32, BF16, MXFP4, ...
OTHER_FTYPES = "|".join(sorted((n for n, r in format_rows().items()
                                if r.ftype_id is not None and not re.fullmatch(r"I?Q\d\w*", n)), key=len, reverse=True))
FILE_QUANT = re.compile(rf"[-._](?:UD-)?((?:I?Q\d[A-Z0-9_]*)|{OTHER_FTYPES})$", re.I)
# predict's parameters as the llama-bench flags that set them: a test not predicted says why in the run's words
BENCH_WORDS = {"ubatch": "-ub", "n_batch": "-b", "context": "-d", "prompt": "-p", "gen": "-n", "flash_attention": "-fa"}
FTYPE_WORDS = re.compile(rf"\b(I?Q\d\w*|{OTHER_FTYPES})(?: - (Small|Medium|Large|Extra small))?\b", re.I)


@dataclass(frozen=True)
class Compared:
    row: BenchRow
    model: str
    quant: str
    engine: str
    device: str
    predicted_tok_s: float
    error_pct: float
    source: str
    era: str = ""               # where the test's build is not its file's number: the one predicted at, and why


def quant_of(row: BenchRow) -> str:
    """The weight format of a test: its file type (``llama 8B Q4_K - Medium``), else its file name's suffix."""
    m = FTYPE_WORDS.search(row.model_type)
    if m:
        base = m.group(1).upper()
        return canonical(base + ("_" + SIZE_WORD[m.group(2).lower()] if m.group(2) and "_K" in base else ""))
    stem = re.sub(r"(-\d{5}-of-\d{5})?\.gguf$", "", row.model_filename.rsplit("/", 1)[-1], flags=re.I)
    f = FILE_QUANT.search(stem)
    if f:
        return canonical(f.group(1).upper())
    raise UserError(f"no weight format in {row.model_type or row.model_filename!r}", "give the model's `quant`")


def model_of(row: BenchRow) -> str:
    """The catalog model of a test from its file name: the longest leading part of the name the catalog knows."""
    stem = re.sub(r"(-\d{5}-of-\d{5})?\.gguf$", "", row.model_filename.replace("\\", "/").rsplit("/", 1)[-1],
                  flags=re.I)
    stem = FILE_QUANT.sub("", stem)
    parts = re.split(r"(?<=[^-._])[-._](?=[A-Za-z])", stem)
    for n in range(len(parts), 0, -1):
        found = resolve_id("-".join(parts[:n]), packaging=True)
        if found:
            return found
    raise UserError(f"model {row.model_filename or row.model_type!r} is not in the catalog",
                    "name it: tokspeed measure MODEL `from_file` FILE")


def engine_of(row: BenchRow) -> str:
    """The engine that ran a test: its first backend (the engine table's ``[llama_bench]``), CPU where -ngl 0."""
    backends = llama_bench_backends()
    if row.n_gpu_layers == 0:
        return backends[CPU_BACKEND]
    first = row.backend.split(",")[0].strip().lower()
    if first not in backends:
        raise UserError(f"llama-bench backend {row.backend[:40]!r} is not one tokspeed models",
                        "one of " + ", ".join(sorted(backends)))
    return backends[first]


def device_of(row: BenchRow, engine: str) -> str:
    name = row.cpu_info if engine == llama_bench_backends()[CPU_BACKEND] else row.gpu_info.split(",")[0]
    if not name.strip():
        raise UserError("the file names no device", "give `hardware` NAME or a probed profile")
    return name.strip()


def build_of(row: BenchRow, engine: str) -> tuple[str | None, str]:
    """(the engine version a test is predicted at, a note where that is not the file's build number).

    The number is cmake's commit count (eras.toml ``llama_bench_since``): a release number on a full clone, 1 in a
    shallow clone, 0 without git. One that places the build before llama-bench existed is not a release number: the
    test is predicted at its run's month (a build is no newer than its run), or, where the format has no time (the
    markdown table), at the newest calibrated era."""
    m = re.search(r"\((\d+)\)", row.build)
    digits = m.group(1).lstrip("0") or "0" if m else ""
    if m and len(digits) <= 5 and release_build(engine, int(digits)):      # b<number>: five digits at most
        return f"b{digits}", ""
    why = (f"build number {digits[:12]} is not a release number (a shallow clone or a source tree without git "
           "counts its own commits)" if m else "the file gives no build number")
    if row.test_time:
        return row.test_time[:7], f"predicted at {row.test_time[:7]}, the month of the run: {why}"
    return None, f"predicted at the newest calibrated build: {why}"


def predicted_rate(row: BenchRow, model, hw, quant: str, engine: str, version: tuple | None = None
                   ) -> tuple[float, str]:
    """The test's rate as ``predict`` gives it with the settings the test ran: its -fa, its build (``build_of``), its
    -ub / -b (the prompt's micro-batches) and, on the CPU backend, its -t (``engines.cpu.with_threads``: the SIMD
    units it used). ``version``: ``build_of(row, engine)`` where the caller has it already."""
    fa = {1: True, 0: False}.get(row.flash_attn)
    if engine == llama_bench_backends()[CPU_BACKEND] and row.n_threads > 0 and isinstance(hw, Hardware):
        hw = with_threads(hw, row.n_threads)
    p = predict(model, hw, quant=quant, engine=engine, prompt=row.n_prompt, gen=max(row.n_gen, 1),
                context=row.n_depth, flash_attention=fa, engine_version=(version or build_of(row, engine))[0],
                ubatch=row.n_ubatch, n_batch=row.n_batch)
    if row.metric == "prefill":
        return p.prefill.tok_s, p.engine_profile.source
    if row.metric == "decode":
        return p.decode.tok_s, p.engine_profile.source
    seconds = row.n_prompt / p.prefill.tok_s + row.n_gen / p.decode.tok_s
    return (row.n_prompt + row.n_gen) / seconds, p.engine_profile.source


def compare(rows, model: str | None = None, hardware=None) -> tuple[list[Compared], list[str]]:
    """(the tests predicted, one line per test that could not be: which and why)."""
    out, skipped, unnamed = [], [], False
    for i, row in enumerate(rows):
        try:
            engine = engine_of(row)
            hw = hardware if hardware is not None else get_hardware(device_of(row, engine))
            m, q = model or model_of(row), quant_of(row)
        except UserError as e:          # what ran, on what: the user can name it
            skipped.append(f"test {i + 1} ({row.test}): {e.message}")
            unnamed = True
            continue
        version = build_of(row, engine)
        try:
            rate, source = predicted_rate(row, m, hw, q, engine, version)
        except UserError as e:
            skipped.append(f"test {i + 1} ({row.test}): {reword(e.message, BENCH_WORDS, e.field)}")
            continue
        out.append(Compared(row, m, q, engine, getattr(hw, "name", str(hw)), rate,
                            (rate / row.avg_ts - 1) * 100, source, version[1]))
    if not out:
        raise UserError("no test of the file could be predicted: " + (skipped[0] if skipped else "none"),
                        "give the model (tokspeed measure MODEL `from_file` FILE) or `hardware`" if unnamed else "")
    return out, skipped


def calibrate_from(compared: list[Compared], hw, profile_path):
    """Fit this machine's llama.cpp calibration on the decode tests and store it in ``profile_path``."""
    if profile_path is None:
        raise UserError("`calibrate` stores the fit in a probed hardware profile",
                        "add `hardware` local (after `tokspeed probe`) or `hardware` PROFILE.toml")
    dec = [c for c in compared if c.row.metric == "decode"]
    if not dec:
        raise UserError("`calibrate` needs generation tests (tg128 ...): the file has none")
    pts, fa = [], set()
    for c in dec:
        pred = predict_point(c.model, hw, runtime_of(c.engine), c.quant, c.row.n_depth, c.row.n_gen, 1, 0,
                             flash_attention={1: True, 0: False}.get(c.row.flash_attn))
        x = pred.get("attn_extra_bytes_per_step", 0.0)
        pts.append((pred["bytes_per_step"] + x, 1.0 / c.row.avg_ts - pred.get("attn_compute_excess_s", 0.0),
                    pred["kv_bytes_per_step"] + x))
        fa.add(c.row.flash_attn)
    tests = sorted({f"{c.model} {c.quant} {c.row.test}" for c in dec})
    cal = fit(pts, hw.bandwidth_gbps, runtime_of(dec[0].engine), fitted_on="llama-bench: " + "; ".join(tests)[:400],
              flash_attention={1: True, 0: False}.get(fa.pop()) if len(fa) == 1 else None, attention_net=True,
              attention_compute_net=True)
    store_calibration(profile_path, cal)
    return cal
