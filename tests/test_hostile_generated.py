"""A generator, not a list (issue 26): every verb's argparse definition is walked and every flag and positional
gets hostile values of each kind -- empty, NaN, ±inf, 1e-321, 1e309, huge and negative numbers, unicode
digits, control characters, rich markup, TeX, and paths to a FIFO, a folder, a symlink loop and /proc. Each
call must end in bounded time with exit 0 (a clean run) or 2 with one clear line on stderr, never a
traceback. A flag added tomorrow is covered the day it is added.

The verbs run in-process (``tokspeed.cli.main.main``) so the walk is fast; the expensive ones stop right
after their arguments are validated (the measurement, the benchmark, the server loop and the probe are
replaced by a stop), and `fit` ranks a two-model catalog, so coverage is not traded for time.
"""

import argparse
import contextlib
import io
import os
import signal
import sys
import time

import pytest

from tokspeed.cli.main import build_parser, main

CALL_LIMIT_S = 20        # one call (the first of a verb imports its modules; torch takes seconds)
NUMBERS = ["", "nan", "-inf", "inf", "1e309", "1e-321", "-1", "0", "9" * 40, "١٢٣"]
TEXTS = ["\x1b[31mred\x00", "a\nb", "[/bold]", "$\\frac{x$", "x" * 5000]


class _Validated(Exception):
    """Raised where a verb's real work would begin: everything before it (the validation) has run."""


def _stop(*a, **k):
    raise _Validated


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile-paths")
    fifo = d / "fifo"
    os.mkfifo(fifo)
    loop = d / "loop"
    loop.symlink_to(loop)
    return [str(fifo), str(d), str(loop), "/proc/self/mem", "/proc/tokspeed-none/x.json"]


def _patch_everywhere(monkeypatch, original, replacement):
    """Replace a function in its home module and in every module of the package that imported it by name."""
    for mod in [m for name, m in sys.modules.items() if name.startswith("tokspeed") and m is not None]:
        for attr, value in list(vars(mod).items()):
            if value is original:
                monkeypatch.setattr(mod, attr, replacement)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Work stops after validation; nothing reaches the network; stray files land in tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "120")
    import tokspeed.measure.detect
    import tokspeed.measure.runner
    import tokspeed.models.catalog as catalog
    import tokspeed.serverbench.bench
    from tokspeed.cli import measure as measure_cli

    import tokspeed.cli.bench_server
    import tokspeed.cli.probe

    for original in (tokspeed.serverbench.bench.run_bench, tokspeed.measure.runner.measure,
                     tokspeed.measure.detect.detect):
        _patch_everywhere(monkeypatch, original, _stop)
    monkeypatch.setattr(measure_cli, "_generate", _stop)
    try:
        from tokspeed.web.server import Server

        monkeypatch.setattr(Server, "serve_forever", _stop)
    except ImportError:
        pass
    ids = catalog.model_ids()
    _patch_everywhere(monkeypatch, catalog.model_ids, lambda: [i for i in ids if i in ("llama-3-8b", "mixtral-8x7b")])
    return tmp_path


def base_args(verb: str, tmp) -> list[str]:
    hw = ["--hardware", "rtx-4090"]
    return {"predict": ["llama-3-8b", *hw], "sweep": ["llama-3-8b", *hw], "explain": ["llama-3-8b", *hw],
            "plan": ["llama-3-8b", *hw], "report": ["llama-3-8b", *hw, "-o", str(tmp / "r.html")],
            "compare": ["llama-3-8b", "--hardware", "rtx-4090,h100-sxm"], "fit": hw,
            "measure": ["llama-3-8b", *hw], "probe": ["-o", str(tmp / "profile.toml")],
            "bench-server": ["http://127.0.0.1:9", "--model", "m", "-o", str(tmp / "run")],
            "tokens": ["hello", "--model", "llama-3-8b"], "inspect": ["llama-3-8b"],
            "compare-runs": ["a.json", "b.json"], "web": ["--port", "0"]}.get(verb, [])


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()

    def alarm(*_):
        raise TimeoutError(f"tokspeed {' '.join(map(repr, argv))[:200]} ran past {CALL_LIMIT_S} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(CALL_LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 2
            except _Validated:
                rc = 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return rc, err.getvalue()


def verbs():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def slots(parser):
    """(flag or None for a positional, dest) of every argument that takes a value."""
    for a in parser._actions:
        if a.nargs == 0 or a.dest in ("help", "version", "_run"):
            continue
        yield (a.option_strings[0] if a.option_strings else None), a


def argv_with(base: list[str], parser, flag, action, value) -> list[str]:
    if flag is not None:
        return [*base, flag, value]
    positionals = [a for a in parser._actions if not a.option_strings and a.nargs != 0]
    i = positionals.index(action)
    base = list(base)
    pos_idx = [k for k, tok in enumerate(base) if not tok.startswith("-") and (k == 0 or not base[k - 1].startswith("-"))]
    if i < len(pos_idx):
        base[pos_idx[i]] = value
        return base
    return [*base, value]


def check(verb, argv, rc, err):
    assert "Traceback" not in err, (argv, err[-2000:])
    assert rc in (0, 2), (argv, rc, err[-500:])
    if rc == 2:
        lines = []      # one entry per message: a message wrapped at COLUMNS continues on lines indented two spaces
        for ln in (ln for ln in err.splitlines() if ln.strip()):
            if ln.startswith("  ") and lines:
                lines[-1] += " " + ln.strip()
            else:
                lines.append(ln)
        assert lines, (argv, "exit 2 without a word")
        last = lines[-1]
        assert last.startswith("tokspeed") and "error" in last, (argv, err[-500:])
        assert len(lines) <= 3, (argv, err[-800:])     # warnings may precede it; the error is one message


@pytest.mark.parametrize("verb", sorted(verbs()))
def test_every_flag_of_every_verb_takes_hostile_values(verb, sandbox, paths):
    parser = verbs()[verb]
    base = base_args(verb, sandbox)
    t0 = time.perf_counter()
    n = 0
    for flag, action in slots(parser):
        values = NUMBERS + TEXTS + paths
        if action.choices:                      # argparse refuses the rest by itself: a few suffice
            values = ["", "nan", "a\nb", "[/bold]", paths[0]]
        for value in values:
            argv = [verb, *argv_with(base, parser, flag, action, value)]
            rc, err = run(argv)
            check(verb, argv, rc, err)
            n += 1
    assert n == 0 or time.perf_counter() - t0 < 120
