"""The run directory: ``requests.jsonl`` written line by line, ``summary.json`` rebuilt from it.

``requests.jsonl`` starts with one ``{"type": "run", ...}`` line (what was asked: URL without
credentials, model, API, load plan, tokspeed version), then one ``{"type": "request", ...}`` line per
finished request, each flushed and fsynced as it is written: a Ctrl-C, a crash or a power cut loses at
most the requests in flight. A run that ends (normally, by Ctrl-C, or aborted) adds ``{"type": "end",
"interrupted": ..., "aborted": reason or null}``; without it the run was killed, and a rebuilt summary says ``partial``.
The API key is never written: the run line only says where it came from, and every line, the summary and
the CSV are written through ``guard.outputs``, whose writer masks every secret (a server echoing the key gets
nothing into them).
``read_jsonl`` skips a torn last line (a crash mid-write) and says how many lines it skipped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import NamedTuple

from ..errors import UserError
from ..guard.escape import csv_cell
from ..guard.limits import MAX_RUN_FILE_BYTES
from ..guard.outputs import RunDir, write_in
from ..guard.typed import count, number, parse, rate, seconds
from ..userfile import path_kind

REQUESTS = "requests.jsonl"
MAX_LINE_CHARS = 16 * 2**20  # one record read back: ours are < 1 MB (32,768 gaps); longer is not ours
SUMMARY = "summary.json"
RUN_FILES = (REQUESTS, SUMMARY, "requests.csv", "report.html")  # what a run writes in its directory


class Recorder:
    def __init__(self, directory: Path, run_info: dict):
        self.rundir = RunDir(directory, "run directory")   # held open: every file of the run written through it
        self.dir = self.rundir.path
        self.path = self.dir / REQUESTS
        if self.rundir.size(REQUESTS) > 0:
            self.rundir.close()
            raise UserError(f"{self.path} already exists",
                            f"choose another `output`, or rebuild its summary from it: summarize='{self.dir}'",
                            field="output")
        self._f = self.rundir.open_append(REQUESTS, REQUESTS)
        self.write({"type": "run", **run_info})

    def write(self, record: dict) -> dict:
        """Append one line (secrets masked by the writer, ``guard.outputs``); returns the record (sanitized if it
        held a NaN or an odd type)."""
        try:
            line = json.dumps(record, separators=(",", ":"), allow_nan=False)
        except (ValueError, TypeError):  # a NaN or an odd type slipped through: keep the record, say so
            record = {**json_safe(record), "sanitized": True}
            line = json.dumps(record, separators=(",", ":"), allow_nan=False)
        self._f.write(line + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        return record

    def close(self) -> None:
        """The log closed; the folder stays held for the summary, the CSV and the report (``rundir``)."""
        self._f.close()


def json_safe(obj):
    """``obj`` with every non-finite float replaced by None and every non-JSON type by its repr."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return repr(obj)[:200]


# the schema of a request line: each field a summary computes with, and the range it can physically take
# (guard.typed): a count of tokens or chunks a whole number <= 2**53, a time within a day, a rate finite
REQUEST_FIELDS = {"ttft_s": seconds, "tpot_s": seconds, "e2e_s": seconds, "decode_s": seconds, "queued_s": seconds,
                  "start_s": number, "end_s": number, "prompt_tokens": count, "output_tokens": count,
                  "target_prompt_tokens": count, "max_tokens": count, "chunks": count, "concurrency": count,
                  "rate_rps": rate, "http_status": count, "itl_n": count, "itl_mean_s": seconds, "itl_min_s": seconds,
                  "itl_max_s": seconds, "sse_lines_dropped": count}
NUMBER_FIELDS = tuple(REQUEST_FIELDS)


def typed_request(rec: dict) -> dict:
    """A request line read back through its schema: a number outside its field's range (a negative time, a
    count of 10**300, a fraction of a token), gaps that are not a list of times, labels that are not text
    become None (a summary is computed from what is sound); a record whose end precedes its start has no
    times."""
    out = dict(rec)
    for k, reader in REQUEST_FIELDS.items():
        v = out.get(k)
        if v is not None:
            out[k] = reader(v)
    if out.get("start_s") is not None and out.get("end_s") is not None and out["end_s"] < out["start_s"]:
        out["start_s"] = out["end_s"] = out["e2e_s"] = None
    gaps = out.get("itl_s")
    if gaps is not None:
        out["itl_s"] = [seconds(g) for g in gaps] if isinstance(gaps, list) else []
    for k in ("phase", "error", "error_detail", "output_tokens_source", "prompt_tokens_source", "finish_reason"):
        if out.get(k) is not None and not isinstance(out[k], str):
            out[k] = str(out[k])[:200]
    if not isinstance(out.get("server_timings"), (dict, type(None))):
        out["server_timings"] = None
    if "ok" in out and not isinstance(out["ok"], bool):
        out["ok"] = False
    return out


class RunLog(NamedTuple):
    run: dict  # the run line
    requests: list[dict]
    end: dict | None  # the end line; None if the run never reached its end
    unreadable: int  # lines skipped (torn or not JSON objects)

    @property
    def partial(self) -> bool:
        return self.end is None or bool(self.end.get("interrupted")) or bool(self.end.get("aborted"))


def read_jsonl(path: Path) -> RunLog:
    path = Path(path)
    if path_kind(path, "run") == "dir":       # a FIFO, a loop, a name too long or a NUL: one line
        path = path / REQUESTS
    if path_kind(path, REQUESTS) != "file":
        raise UserError(f"no {REQUESTS} at {path}", "give the directory a bench-server run wrote (-o DIR)")

    if path.stat().st_size > MAX_RUN_FILE_BYTES:     # every record is held: the file's size bounds the memory
        raise UserError(f"{path} is {path.stat().st_size / 2**30:.1f} GiB, over the {MAX_RUN_FILE_BYTES / 2**30:g} GiB "
                        "a run file may have", "summarize a part of it (head -n N requests.jsonl > part/requests.jsonl)")
    run, requests, end, bad = {}, [], None, 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in _bounded_lines(f):
                if line is None:                # longer than MAX_LINE_CHARS: skipped, never held
                    bad += 1
                    continue
                if not line.strip():
                    continue
                try:
                    obj = parse(line)   # the one gate: NaN, 1e400, 400 digits, deep nesting: not a line we wrote
                except ValueError:
                    bad += 1
                    continue
                if not isinstance(obj, dict):
                    bad += 1
                elif obj.get("type") == "run" and not run:
                    run = obj
                elif obj.get("type") == "request":
                    requests.append(typed_request(obj))
                elif obj.get("type") == "end":
                    end = obj
                else:
                    bad += 1
    except OSError as e:        # /proc/self/mem and other files that cannot be read
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    return RunLog(run, requests, end, bad)


def _bounded_lines(f):
    """The lines of ``f``; None for a line longer than MAX_LINE_CHARS (read past in pieces)."""
    while line := f.readline(MAX_LINE_CHARS):
        if len(line) == MAX_LINE_CHARS and not line.endswith("\n"):
            while (rest := f.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
                pass
            yield None
        else:
            yield line


CSV_FIELDS = ("index", "phase", "concurrency", "rate_rps", "warmup", "ok", "error", "http_status", "start_s", "end_s",
              "queued_s", "ttft_s", "tpot_s", "e2e_s", "decode_s", "prompt_tokens", "prompt_tokens_source",
              "target_prompt_tokens", "output_tokens", "output_tokens_source", "max_tokens", "chunks",
              "sse_lines_dropped", "itl_n", "itl_mean_s", "itl_max_s", "conversation", "turn", "error_detail")


def write_csv(directory, records: list[dict]) -> Path:
    """``requests.csv``: one row per request (the JSONL's scalar fields; the gaps as count/mean/max)."""


    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    w.writeheader()
    for r in records:
        gaps = r.get("itl_s") or []
        row = {**r, "itl_n": r.get("itl_n", len(gaps)), "itl_mean_s": r.get("itl_mean_s"),
               "itl_max_s": r.get("itl_max_s")}
        if "itl_n" not in r:
            row["itl_mean_s"] = (sum(gaps) / len(gaps)) if gaps else None
            row["itl_max_s"] = max(gaps) if gaps else None
        w.writerow({k: csv_cell(row.get(k)) for k in CSV_FIELDS})
    return write_in(directory, "requests.csv", buf.getvalue())


def write_summary(directory, summary: dict) -> Path:
    """Write atomically (``guard.outputs.write_file``: temp file + rename, secrets masked) so a reader never sees
    half a summary."""
    return write_in(directory, SUMMARY, json.dumps(summary, indent=2, allow_nan=False) + "\n")
