"""Every CLI verb against a table of hostile inputs (issue 10).

Each case must end with exit code 2 (a usage or input error), exactly one line on stderr
(``...: error: ...``), no traceback, and within a time limit (no hang on a FIFO or /dev/zero, no
gigabyte allocation). A case may also name words the line must contain, so "no such file" for a
FIFO (the wrong message) fails. The inputs are written by the fixture (small files, a FIFO, a sparse
1 GB file, nested documents, a fake Hugging Face cache with a symlink loop).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

LIMIT_S = 60          # per case: a hang (FIFO, /dev/zero, a server that never answers) trips it at once
DEEP = 100_000
LONG = "x" * 300      # longer than NAME_MAX (255 bytes on Linux file systems)


def _files(root):
    f = {}
    (root / "deep.json").write_text("[" * DEEP + "]" * DEEP)
    (root / "deepobj.json").write_text('{"a":' * DEEP + "1" + "}" * DEEP)
    (root / "deep.toml").write_text("a = " + "[" * DEEP + "]" * DEEP + "\n")
    (root / "digits").mkdir()
    (root / "digits" / "config.json").write_text('{"model_type": "llama", "hidden_size": 1' + "0" * 5000 + "}")
    (root / "inf").mkdir()
    (root / "inf" / "config.json").write_text('{"model_type": "llama", "hidden_size": 1e309, "num_hidden_layers": 2}')
    with open(root / "sparse.json", "wb") as fh:        # 1 GB, no blocks allocated
        fh.truncate(1 << 30)
    os.mkfifo(root / "fifo.json")
    os.mkfifo(root / "fifo.gguf")
    (root / "loop.json").symlink_to(root / "loop.json")
    # a run file with the right schema and the wrong types
    (root / "badtypes.json").write_text(json.dumps({"schema": "tokspeed.run", "schema_version": 1, "created": 5,
                                                    "points": [{"decode_tok_s": "fast", "context": [1]}, 7],
                                                    "model": "m", "hardware": [], "settings": "x"}))
    # a hardware TOML whose calibration values have the wrong type / make a speed 0 or infinite
    base = 'name = "d"\nkind = "gpu"\nvendor = "NVIDIA"\nmemory_gb = 24\nbandwidth_gbps = 1000\nfp16_tflops = 100\n'
    cal = '[calibration."llama.cpp"]\neta_memory = {}\noverhead_s = 0.0\n'
    (root / "calstr.toml").write_text(base + cal.format('"fast"'))
    (root / "calzero.toml").write_text(base + cal.format("1e-300"))       # decode speed 0
    (root / "calinf.toml").write_text(base + cal.format("inf"))           # decode speed infinite
    (root / "profile.toml").write_text(base.replace("gpu", "cpu"))     # a valid local profile: measure gets to the model
    (root / "hwstr.toml").write_text(base.replace("1000", '"fast"'))
    (root / "hwtiny.toml").write_text(base.replace("1000", "1e-300"))
    # a Hugging Face cache whose snapshot is a symlink loop, and one whose config.json link dangles
    hub = root / "hub"
    for repo, make in (("loop", "loop"), ("dangle", "dangle")):
        d = hub / f"models--org--{repo}"
        (d / "refs").mkdir(parents=True)
        (d / "refs" / "main").write_text("abc")
        (d / "snapshots").mkdir()
        if make == "loop":
            (d / "snapshots" / "abc").symlink_to(d / "snapshots" / "abc")
        else:
            (d / "snapshots" / "abc").mkdir()
            (d / "snapshots" / "abc" / "config.json").symlink_to(d / "blobs" / "gone")
    # an HF folder with a deeply nested shard index
    (root / "deepidx").mkdir()
    (root / "deepidx" / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64,
                                                              "num_hidden_layers": 2, "num_attention_heads": 2,
                                                              "intermediate_size": 128, "vocab_size": 64}))
    (root / "deepidx" / "model.safetensors.index.json").write_text('{"weight_map":' + "[" * DEEP + "]" * DEEP + "}")
    (root / "locked").mkdir()
    (root / "locked" / "config.json").write_text("{}")
    return f


HW = ["--hardware", "rtx-4090"]
CASES = [
    # fit (what runs here): numbers refused with the flag, unknown names with a suggestion
    ("fit", HW + ["--min-tok-s", "nan"], ["--min-tok-s", "finite"]),
    ("fit", HW + ["--max-params", "inf"], ["--max-params", "finite"]),
    ("fit", HW + ["--top", "-3"], ["--top"]),
    ("fit", ["--hardware", "nope"], ["unknown hardware"]),
    # names and paths (a bare name that is no path is a catalog id: an unknown one says so)
    ("predict", [LONG] + HW, ["unknown model"]),
    ("predict", ["ollama:" + LONG] + HW, []),
    ("predict", ["ollama:llama3:" + "8" * 300] + HW, []),
    ("predict", ["llama-3-8b", "--hardware", LONG + ".toml"], ["too long"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/" + LONG], []),
    ("sweep", [LONG] + HW, ["unknown model"]),
    ("compare", [LONG, "--hardware", "rtx-4090,h100-sxm"], ["unknown model"]),
    ("plan", [LONG, "--target-tok-s", "10"], ["unknown model"]),
    ("explain", [LONG] + HW, ["unknown model"]),
    ("report", [LONG] + HW + ["-o", "{d}/r.html"], ["unknown model"]),
    ("inspect", [LONG + ".gguf"], ["too long"]),
    ("inspect", ["{d}/" + LONG], ["too long"]),
    ("tokens", ["hello", "--model", LONG], ["too long"]),
    ("compare-runs", [LONG + ".json", LONG + "2.json"], ["too long"]),
    ("explain", ["llama-3-8b"] + HW + ["--measured", LONG + ".json"], ["too long"]),
    ("predict", ["org/loop"] + HW, ["symbolic link"]),
    ("predict", ["org/dangle"] + HW, ["dangling"]),
    ("inspect", ["org/loop"], ["symbolic link"]),
    ("predict", ["{d}/loop.json"] + HW, ["symbolic link"]),
    ("predict", ["{d}/fifo.json"] + HW, ["FIFO"]),
    ("predict", ["{d}/fifo.gguf"] + HW, ["FIFO"]),
    ("inspect", ["{d}/fifo.gguf"], ["FIFO"]),
    ("predict", ["/dev/zero"] + HW, ["device"]),
    ("inspect", ["/dev/zero"], ["device"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/fifo.json"], []),
    ("predict", ["llama-3-8b", "--hardware", "/dev/zero"], ["device"]),
    ("compare-runs", ["{d}/fifo.json", "/dev/zero"], ["FIFO"]),
    ("explain", ["llama-3-8b"] + HW + ["--measured", "/dev/zero"], ["device"]),
    ("plan", ["llama-3-8b", "--target-tok-s", "10", "--prices", "{d}/fifo.json"], ["FIFO"]),
    # numbers
    ("sweep", ["llama-3-8b"] + HW + ["--context", "inf"], ["--context"]),
    ("sweep", ["llama-3-8b"] + HW + ["--batch", "1e400"], ["--batch"]),
    ("sweep", ["llama-3-8b"] + HW + ["--context", "nan"], ["--context"]),
    ("predict", ["llama-3-8b"] + HW + ["--context", "inf"], ["--context"]),
    ("predict", ["llama-3-8b"] + HW + ["--batch", "1e400"], ["--batch"]),
    ("predict", ["llama-3-8b"] + HW + ["--prompt", "2.5"], ["--prompt"]),
    ("predict", ["llama-3-8b"] + HW + ["--context", "32Q"], ["--context"]),
    ("explain", ["llama-3-8b"] + HW + ["--context", "inf"], ["--context"]),
    ("plan", ["llama-3-8b", "--target-tok-s", "10", "--context", "1e400"], ["--context"]),
    ("measure", ["llama-3-8b", "--context", "inf"], ["--context"]),
    ("measure", ["llama-3-8b", "--gen", "nan"], ["--gen"]),
    ("predict", ["llama-3-8b"] + HW + ["--price-per-hour", "nan"], ["--price-per-hour"]),
    ("predict", ["llama-3-8b"] + HW + ["--price-per-hour", "inf"], ["--price-per-hour"]),
    ("compare", ["llama-3-8b", "--hardware", "rtx-4090", "--price-per-hour", "nan"], ["--price-per-hour"]),
    ("predict", ["llama-3-8b"] + HW + ["--rate", "nan"], ["--rate"]),
    ("predict", ["llama-3-8b"] + HW + ["--rate", "inf"], ["--rate"]),
    ("sweep", ["llama-3-8b"] + HW + ["--rate", "inf"], ["--rate"]),
    ("plan", ["llama-3-8b", "--target-tok-s", "nan"], ["--target-tok-s"]),
    ("plan", ["llama-3-8b", "--target-tok-s", "inf"], ["--target-tok-s"]),
    ("plan", ["llama-3-8b", "--target-tok-s", "10", "--budget", "nan"], ["--budget"]),
    ("predict", ["llama-3-8b", "--bandwidth", "1000GB/s", "--memory", "24GB", "--tflops", "1e-300"], ["--tflops"]),
    ("predict", ["llama-3-8b", "--bandwidth", "1000GB/s", "--memory", "24GB", "--tflops", "nan"], ["--tflops"]),
    ("predict", ["llama-3-8b", "--bandwidth", "1e-300B/s", "--memory", "24GB", "--json"], ["--bandwidth"]),
    ("predict", ["llama-3-8b", "--bandwidth", "1e400GB/s", "--memory", "24GB"], ["--bandwidth"]),
    ("predict", ["llama-3-8b", "--bandwidth", "1000GB/s", "--memory", "inf"], ["--memory"]),
    ("explain", ["llama-3-8b", "--bandwidth", "1e-300B/s", "--memory", "24GB"], ["--bandwidth"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/calstr.toml"], ["eta_memory"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/calzero.toml", "--json"], ["eta_memory"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/calinf.toml", "--json"], ["inf", "not finite"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/hwstr.toml"], ["bandwidth_gbps"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/hwtiny.toml", "--json"], ["bandwidth_gbps"]),
    # files read whole
    ("predict", ["{d}/deep.json"] + HW, ["nested"]),
    ("predict", ["{d}/deepobj.json"] + HW, ["nested"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/deep.toml"], ["nested"]),
    ("compare-runs", ["{d}/deep.json", "{d}/deepobj.json"], ["nested"]),
    ("explain", ["llama-3-8b"] + HW + ["--measured", "{d}/deepobj.json"], ["nested"]),
    ("plan", ["llama-3-8b", "--target-tok-s", "10", "--prices", "{d}/deep.toml"], ["nested"]),
    ("predict", ["{d}/deepidx"] + HW, ["nested"]),
    ("inspect", ["{d}/deepidx"], ["nested"]),
    ("predict", ["{d}/digits"] + HW, ["digits"]),
    ("predict", ["{d}/digits/config.json"] + HW, ["digits"]),
    ("predict", ["{d}/inf/config.json"] + HW, ["1e309"]),
    ("predict", ["{d}/sparse.json"] + HW, ["MiB"]),
    ("predict", ["llama-3-8b", "--hardware", "{d}/sparse.json"], ["MiB"]),
    ("compare-runs", ["{d}/sparse.json", "{d}/badtypes.json"], ["MiB"]),
    ("compare-runs", ["{d}/badtypes.json", "{d}/badtypes.json"], ["badtypes.json"]),
    ("explain", ["llama-3-8b"] + HW + ["--measured", "{d}/badtypes.json"], ["badtypes.json"]),
    # the device a measurement runs on
    ("measure", ["llama-3-8b", "--device", "tpu"], ["tpu"]),
    ("probe", ["--repeats", "nan"], ["--repeats"]),
    ("models", ["--bogus"], []),
    ("hardware", ["--kind", "tpu"], []),
    ("hardware", [LONG], ["unknown hardware"]),
    ("hardware", ["../" + LONG], ["too long"]),
    ("hardware", ["/dev/zero"], ["device"]),
    ("hardware", ["{d}/deep.toml"], ["nested"]),
    ("tokens", ["hello", "--model", "{d}/fifo.gguf"], ["FIFO"]),
    ("tokens", ["hello", "--model", "org/loop"], ["symbolic link"]),
    ("measure", [LONG], []),
    ("measure", ["{d}/fifo.gguf"], ["FIFO"]),
    ("measure", ["{d}/deep.json"], ["nested"]),
    ("measure", ["{d}/sparse.json"], ["MiB"]),
    ("measure", ["org/loop"], ["symbolic link"]),
    ("measure", ["llama-3-8b", "-o", "{d}/fifo.json"], ["FIFO"]),      # checked before the run, not after
    ("measure", ["llama-3-8b", "-o", "{d}/hub"], ["folder"]),
    ("measure", ["llama-3-8b", "-o", "{d}/badtypes.json/run.json"], ["not a folder"]),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    _files(d)
    return d


def run(args, env_extra=None, cwd=None):
    env = dict(os.environ, **(env_extra or {}))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True, timeout=LIMIT_S,
                       env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    return r, time.monotonic() - t0


def assert_one_line(r, code=2, words=()):
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    assert len(lines) == 1 and "error:" in lines[0], r.stderr
    for w in words:
        assert w.lower() in lines[0].lower(), (w, lines[0])
    return lines[0]


@pytest.mark.parametrize("verb,args,words", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_hostile(hostile, verb, args, words):
    args = [a.replace("{d}", str(hostile)) for a in args]
    r, _ = run([verb, *args], env_extra={"HF_HUB_CACHE": str(hostile / "hub"), "OLLAMA_MODELS": str(hostile / "ollama"),
                                         "TOKSPEED_LOCAL_PROFILE": str(hostile / "profile.toml")})
    assert_one_line(r, 2, words)


@pytest.mark.skipif(os.geteuid() == 0, reason="root enters any directory")
def test_directory_without_permission(hostile):
    locked = hostile / "locked"
    locked.chmod(0)
    try:
        r, _ = run(["predict", str(locked / "config.json"), *HW])
        assert_one_line(r, 2, ["permission"])
    finally:
        locked.chmod(0o755)


# ---- one number parser with units, used by every verb -------------------------------------------------
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2      # Llama 3 8B, f16: 131,072 B per context token (the seed article)


@pytest.mark.parametrize("verb,extra", [("predict", ["--prompt", "0", "--gen", "1"]),
                                        ("sweep", ["--prompt", "0", "--gen", "1"])])
def test_context_32k_means_32768_in_every_verb(verb, extra):
    r, _ = run([verb, "llama-3-8b", *HW, "--context", "32K", "--json", *extra])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    out = out[0] if isinstance(out, list) else out
    # 32K = 32,768 tokens in the cache, plus the one token generated
    assert out["memory"]["kv_bytes"] == (32768 + 1) * KV_PER_TOKEN


def test_explain_and_plan_accept_units():
    for args in (["explain", "llama-3-8b", *HW, "--context", "32K", "--json"],
                 ["plan", "llama-3-8b", "--target-tok-s", "1e1", "--context", "8K", "--top", "1", "--json"]):
        r, _ = run(args)
        assert r.returncode == 0, (args, r.stderr)
        json.loads(r.stdout)


def test_units_parsers():
    from tokspeed.errors import UserError
    from tokspeed.units import parse_bytes, parse_count, parse_counts, parse_number

    assert parse_count("32K") == 32768 and parse_count("1.5K") == 1536 and parse_count("1M") == 1 << 20
    assert parse_count("1e3") == 1000 and parse_counts("1024, 8K") == [1024, 8192]
    assert parse_number("2.5") == 2.5 and parse_bytes("1008GB/s") == 1.008e12
    for bad in ("inf", "nan", "1e400", "2.5", "-1", "32Q", "", "1e-3K"):
        with pytest.raises(UserError):
            parse_count(bad)
    for bad in ("inf", "-inf", "nan", "1e400", "ten"):
        with pytest.raises(UserError):
            parse_number(bad)
    for bad in ("1e-300B/s", "1e400GB/s", "0.5B", "inf"):
        with pytest.raises(UserError):
            parse_bytes(bad)


def test_json_output_is_strict():
    """The one encoder of --json refuses NaN and infinity instead of printing them."""
    from tokspeed.cli.options import dumps_json
    from tokspeed.errors import UserError

    assert dumps_json({"a": 1.5}) == '{"a": 1.5}'
    for bad in (float("nan"), float("inf"), [-float("inf")]):
        with pytest.raises(UserError, match="not finite"):
            dumps_json({"x": bad})


# ---- missing optional extras: one line before any work --------------------------------------------------
@pytest.mark.parametrize("module,extra,args", [
    ("matplotlib", "plot", ["report", "llama-3-8b", *HW, "-o", "{d}/r.html"]),
    ("matplotlib", "plot", ["predict", "llama-3-8b", *HW, "--plot", "{d}/p.png"]),
    ("matplotlib", "plot", ["sweep", "llama-3-8b", *HW, "--plot", "{d}/s.svg"]),
    ("tokenizers", "files", ["tokens", "hello", "--model", "{d}/none.gguf"]),
])
def test_missing_extra_is_one_line(tmp_path, module, extra, args):
    args = [a.replace("{d}", str(tmp_path)) for a in args]
    code = (f"import sys; sys.modules[{module!r}] = None\n"      # what an install without the extra looks like
            "from tokspeed.cli.main import main\n"
            f"sys.exit(main({args!r}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT_S)
    line = assert_one_line(r, 2, [f"pip install 'tokspeed[{extra}]'", module])
    assert "ModuleNotFoundError" not in line
    assert list(tmp_path.iterdir()) == [], "nothing may be written before the check"


def test_require_helper():
    from tokspeed.errors import UserError
    from tokspeed.extras import missing, require

    assert missing("json", "no_such_module_xyz") == ["no_such_module_xyz"]
    require("plot", "json")
    with pytest.raises(UserError, match=r"needs no_such_module_xyz.*tokspeed\[server\]"):
        require("server", "no_such_module_xyz")
