"""Read llama-bench's output in every format it writes (``-o json``, ``jsonl``, ``csv``, ``md``, ``sql``) into rows.

The fields and their order are llama-bench's own (``tools/llama-bench/llama-bench.cpp``: ``test::get_fields``):
build_commit, build_number, cpu_info, gpu_info, backends, model_filename, model_type, model_size, model_n_params,
n_batch, n_ubatch, n_threads, ..., n_gpu_layers, ..., flash_attn, ..., n_prompt, n_gen, n_depth, test_time, avg_ns,
stddev_ns, avg_ts, stddev_ts. JSON and JSONL hold them typed, CSV and SQL as strings, the markdown table only the
columns it prints (model type, size, params, backend, ngl, threads and the flags set away from their defaults, the
test as ``pp512`` / ``tg128`` / ``pp512+tg128`` with `` @ d4096`` for a depth, ``t/s`` as ``mean ± stddev``), with
``build: <commit> (<number>)`` below it.

The file is read bounded (``userfile.read_bytes``); anything that is not one of these formats, a row without a test
or a speed, a number out of range: one ``UserError`` naming the file and the row.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..errors import UserError
from ..guard.limits import csv_dict_rows, json_line
from ..userfile import read_bytes
from ..workload import MAX_PREFILL_PASSES, prefill_pass_count

TEST_TIME = re.compile(r"20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]T[0-9:]{8}Z")   # llama-bench's get_time_string (UTC)
MAX_ROWS = 10_000            # a llama-bench run is tens of tests; more is not a bench file
MAX_TOKENS = 10**7           # n_prompt / n_gen / n_depth beyond any context window
# the prompt micro-batches a whole file asks tokspeed to time (each a ledger pass, 0.05-0.1 ms): 32 tests at the
# per-prompt cap (workload.MAX_PREFILL_PASSES), about a minute; a real run's pp512..pp16384 tests need a few hundred
MAX_FILE_PASSES = 32 * MAX_PREFILL_PASSES
FORMATS = ("json", "jsonl", "csv", "md", "sql")


@dataclass(frozen=True)
class BenchRow:
    """One llama-bench test: what ran and how fast."""
    model_filename: str
    model_type: str             # "llama 8B Q4_K - Medium": architecture, size, file type
    model_size: float           # bytes
    model_n_params: float
    backend: str                # "CUDA", "Metal,BLAS", "Vulkan", "ROCm", "SYCL", "CPU"
    n_gpu_layers: int
    n_prompt: int
    n_gen: int
    n_depth: int
    avg_ts: float
    stddev_ts: float = 0.0
    n_batch: int = 2048
    n_ubatch: int = 512
    n_threads: int = 0
    flash_attn: int = -1        # 1 on, 0 off, -1 auto (llama-bench's default in 2025 builds)
    build: str = ""             # "<commit> (<number>)"
    gpu_info: str = ""
    cpu_info: str = ""
    test_time: str = ""         # the test's start, "YYYY-MM-DDTHH:MM:SSZ" (not in the markdown table)

    @property
    def test(self) -> str:
        """The test as llama-bench names it: pp512, tg128, pp512+tg128, `` @ d4096`` for a depth."""
        name = (f"pp{self.n_prompt}" if not self.n_gen else f"tg{self.n_gen}" if not self.n_prompt
                else f"pp{self.n_prompt}+tg{self.n_gen}")
        return name + (f" @ d{self.n_depth}" if self.n_depth else "")

    @property
    def metric(self) -> str:
        """prefill (a prompt only), decode (generation only) or mixed (pp+tg: one rate over both)."""
        return "prefill" if not self.n_gen else "decode" if not self.n_prompt else "mixed"


def sniff(text: str) -> str:
    """The format of a llama-bench output text."""
    head = text.lstrip()[:4096]
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl"
    if head.upper().startswith(("CREATE TABLE", "INSERT INTO")):
        return "sql"
    if head.startswith("|"):
        return "md"
    if head.startswith("build_commit") or head.startswith('"build_commit'):
        return "csv"
    raise UserError("not llama-bench output (JSON, JSONL, CSV, markdown or SQL)",
                    "run llama-bench with -o json, -o jsonl, -o csv, -o md or -o sql and give that file")


def read_bench(path) -> list[BenchRow]:
    """Every test of a llama-bench output file (its format recognised from its first characters)."""
    p, data = read_bytes(path, "llama-bench output", "give the file llama-bench wrote (-o json|jsonl|csv|md|sql)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{p}: not text (llama-bench writes UTF-8)") from None
    fmt = sniff(text)
    records = {"json": _json, "jsonl": _jsonl, "csv": _csv, "md": _markdown, "sql": _sql}[fmt](text, str(p))
    if not records:
        raise UserError(f"{p}: no tests in this llama-bench {fmt} output", "was the run interrupted?")
    if len(records) > MAX_ROWS:
        raise UserError(f"{p}: {len(records):,} tests; a llama-bench output holds at most {MAX_ROWS:,} here")
    rows = [_row(r, f"{p}: test {i + 1}") for i, r in enumerate(records)]
    passes = sum(prefill_pass_count(r.n_prompt, r.n_ubatch, r.n_batch) for r in rows)
    if passes > MAX_FILE_PASSES:
        raise UserError(f"{p}: its prompt tests are {passes:,} micro-batches in all; tokspeed times at most "
                        f"{MAX_FILE_PASSES:,} for one file", "split the file, or give the tests a larger n_ubatch")
    return rows


def _json(text: str, where: str) -> list[dict]:
    data = json_line(text, where)
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{where}: not llama-bench JSON (a list of tests)")
    return data


def _jsonl(text: str, where: str) -> list[dict]:
    out = []
    for i, line in enumerate(text.splitlines()):
        if line.strip():
            rec = json_line(line, f"{where}: line {i + 1}")
            if not isinstance(rec, dict):
                raise UserError(f"{where}: line {i + 1}: not a llama-bench test (a JSON object)")
            out.append(rec)
    return out


def _csv(text: str, where: str) -> list[dict]:
    return csv_dict_rows(text, where)[1]


SQL_INSERT = re.compile(r"INSERT INTO llama_bench \(([^)]*)\) VALUES \((.*)\);\s*$")


def _sql(text: str, where: str) -> list[dict]:
    out = []
    for i, line in enumerate(text.splitlines()):
        if not line.startswith("INSERT"):
            continue
        m = SQL_INSERT.match(line)
        if not m:
            raise UserError(f"{where}: line {i + 1}: not a llama-bench INSERT")
        names = [n.strip() for n in m.group(1).split(",")]
        values = re.findall(r"'((?:[^']|'')*)'", m.group(2))
        if len(names) != len(values):
            raise UserError(f"{where}: line {i + 1}: {len(names)} fields but {len(values)} values")
        out.append({n: v.replace("''", "'") for n, v in zip(names, values)})
    return out


# markdown column names -> llama-bench field names (markdown_printer::get_field_display_name)
MD_FIELDS = {"ngl": "n_gpu_layers", "threads": "n_threads", "fa": "flash_attn", "n_ubatch": "n_ubatch",
             "n_batch": "n_batch", "backend": "backends", "model": "model_type"}
MD_TEST = re.compile(r"^(?:pp(\d+))?(?:\+?tg(\d+))?(?: @ d(\d+))?$")
MD_BUILD = re.compile(r"^build: (\S+) \((\d+)\)")
UNITS = {"B": 1e9, "M": 1e6, "K": 1e3, "GiB": 2**30, "MiB": 2**20, "KiB": 2**10}


def _md_amount(cell: str, where: str) -> float:
    m = re.match(r"^([0-9.]+) (GiB|MiB|KiB|B|M|K)$", cell.strip())
    if not m:
        raise UserError(f"{where}: {cell.strip()[:40]!r} is not a size (e.g. 4.58 GiB, 8.03 B)")
    return float(m.group(1)) * UNITS[m.group(2)]


def _markdown(text: str, where: str) -> list[dict]:
    lines = [ln.strip() for ln in text.splitlines()]
    table = [ln for ln in lines if ln.startswith("|")]
    build = next((m.groups() for m in map(MD_BUILD.match, lines) if m), ("", ""))
    if len(table) < 2:
        raise UserError(f"{where}: no markdown table")
    head = [c.strip() for c in table[0].strip("|").split("|")]
    if "test" not in head or "t/s" not in head:
        raise UserError(f"{where}: a markdown table without llama-bench's test and t/s columns")
    out = []
    for i, line in enumerate(table[2:]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(head):
            raise UserError(f"{where}: table row {i + 1} has {len(cells)} cells, the header {len(head)}")
        cell = dict(zip(head, cells))
        rec = {MD_FIELDS.get(k, k): v for k, v in cell.items() if k not in ("test", "t/s", "size", "params")}
        test = MD_TEST.match(cell["test"])
        speed = re.match(r"^([0-9.]+)(?: ± ([0-9.]+))?$", cell["t/s"])
        if not test or not any(test.groups()[:2]) or not speed:
            raise UserError(f"{where}: table row {i + 1}: test {cell['test'][:30]!r} / t/s {cell['t/s'][:30]!r} "
                            "are not llama-bench's (pp512, tg128 @ d4096; 123.45 ± 0.67)")
        rec.update(n_prompt=test.group(1) or 0, n_gen=test.group(2) or 0, n_depth=test.group(3) or 0,
                   avg_ts=speed.group(1), stddev_ts=speed.group(2) or 0,
                   build_commit=build[0], build_number=build[1], model_filename="")
        if "size" in cell:
            rec["model_size"] = _md_amount(cell["size"], f"{where}: table row {i + 1}")
        if "params" in cell:
            rec["model_n_params"] = _md_amount(cell["params"], f"{where}: table row {i + 1}")
        out.append(rec)
    return out


def _int(rec: dict, key: str, where: str, default: int = 0, lo: int = 0, hi: int = MAX_TOKENS) -> int:
    v = rec.get(key, default)
    if isinstance(v, bool):
        v = int(v)
    try:
        n = int(str(v).strip() or default)
    except ValueError:
        raise UserError(f"{where}: {key} {str(v)[:30]!r} is not a whole number") from None
    if not lo <= n <= hi:
        raise UserError(f"{where}: {key} {n:,} is out of range ({lo:,} to {hi:,})")
    return n


def _float(rec: dict, key: str, where: str, default: float = 0.0) -> float:
    v = rec.get(key, default)
    try:
        x = float(str(v).strip() or default)
    except ValueError:
        raise UserError(f"{where}: {key} {str(v)[:30]!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise UserError(f"{where}: {key} {x} is not a measurement (finite, not negative)")
    return x


def _text(rec: dict, key: str, limit: int = 512) -> str:
    v = rec.get(key, "")
    return (v if isinstance(v, str) else json.dumps(v))[:limit].strip()


def _row(rec: dict, where: str) -> BenchRow:
    row = BenchRow(
        model_filename=_text(rec, "model_filename"), model_type=_text(rec, "model_type"),
        model_size=_float(rec, "model_size", where), model_n_params=_float(rec, "model_n_params", where),
        backend=_text(rec, "backends") or _text(rec, "backend"),
        # llama.h: "a negative value means all layers" (-1: llama-bench's default in llama-cpp-python 0.3.36's copy)
        n_gpu_layers=_int(rec, "n_gpu_layers", where, 99, -(1 << 31), 10**6),
        n_prompt=_int(rec, "n_prompt", where), n_gen=_int(rec, "n_gen", where), n_depth=_int(rec, "n_depth", where),
        avg_ts=_float(rec, "avg_ts", where), stddev_ts=_float(rec, "stddev_ts", where),
        n_batch=_int(rec, "n_batch", where, 2048, 1), n_ubatch=_int(rec, "n_ubatch", where, 512, 1),
        n_threads=_int(rec, "n_threads", where, 0, 0, 1 << 16),
        flash_attn=_int(rec, "flash_attn", where, -1, -1, 2),
        build=" ".join(x for x in (_text(rec, "build_commit"), f"({_text(rec, 'build_number')})"
                                   if _text(rec, "build_number") else "") if x),
        gpu_info=_text(rec, "gpu_info"), cpu_info=_text(rec, "cpu_info"),
        test_time=_text(rec, "test_time") if TEST_TIME.fullmatch(_text(rec, "test_time")) else "")
    if not (row.n_prompt or row.n_gen):
        raise UserError(f"{where}: neither n_prompt nor n_gen: no test to compare")
    if not row.avg_ts:
        raise UserError(f"{where}: no speed (avg_ts)", "is the file complete?")
    return row
