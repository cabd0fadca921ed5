"""`tokspeed measure` on the llama.cpp backend, without llama.cpp: a stand-in ``llama_cpp`` module that
behaves like llama-cpp-python when a load fails (its log goes through ``llama_log_set``'s callback, then
``Llama()`` raises "Failed to load model from file"). The real library is exercised by
test_measure_llamacpp.py (slow)."""

from __future__ import annotations

import ctypes
import sys
import types

import pytest

pytest.importorskip("gguf")
pytest.importorskip("psutil")

from files_fixtures import write_llama_gguf  # noqa: E402

from tokspeed.errors import UserError  # noqa: E402

REASON = "llama_model_load: error loading model: tensor 'blk.0.ffn_up.weight' data is not within the file bounds"


def fake_llama_cpp(fail: bool):
    m = types.ModuleType("llama_cpp")
    m.__version__ = "0.3.99"
    m.llama_log_callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    m.current = None

    def log_set(cb, user_data):
        m.current = cb
    m.llama_log_set = log_set
    m.llama_print_system_info = lambda: b"CPU : AVX2 = 1 | "

    class Llama:
        def __init__(self, path, **kw):
            m.current(2, b"llama_model_loader: loaded meta data\n", None)
            if fail:
                m.current(4, (REASON + "\n").encode(), None)
                m.current(4, b"llama_model_load_from_file_impl: failed to load model\n", None)
                raise ValueError(f"Failed to load model from file: {path}")
    m.Llama = Llama
    m._logger = types.SimpleNamespace(llama_log_callback=m.llama_log_callback(lambda *a: None))
    return m


def test_load_failure_shows_llama_cpp_reason(tmp_path, monkeypatch):
    from tokspeed.measure.backend_llamacpp import load_llama

    monkeypatch.setitem(sys.modules, "llama_cpp", fake_llama_cpp(fail=True))
    path = write_llama_gguf(tmp_path / "m.gguf")
    with pytest.raises(UserError) as e:
        load_llama(str(path), n_ctx=64, threads=1)
    assert "data is not within the file bounds" in str(e.value)
    assert "Failed to load model from file" not in str(e.value)
    assert sys.modules["llama_cpp"].current is sys.modules["llama_cpp"]._logger.llama_log_callback  # restored


def test_load_reason_falls_back_to_the_exception():
    from tokspeed.measure.backend_llamacpp import load_failure_reason

    assert load_failure_reason([]) == ""
    assert load_failure_reason(["a: info\n", "b: error loading model: bad magic\n"]) == "b: error loading model: bad magic"


def test_engine_versions():
    from tokspeed.measure.backend_llamacpp import engine_version as llama_version
    from tokspeed.measure.backend_torch import engine_version as torch_version

    assert llama_version(fake_llama_cpp(False)) == {"engine_version": "llama-cpp-python 0.3.99",
                                                    "engine_build": "CPU : AVX2 = 1 |"}
    torch = types.SimpleNamespace(__version__="2.13.0", version=types.SimpleNamespace(cuda=None))
    assert torch_version(torch) == {"engine_version": "torch 2.13.0", "engine_build": "CPU build"}


def test_device_is_checked_before_torch():
    from tokspeed.measure.backend_torch import check_device

    check_device("cpu")
    check_device("cuda:1")
    for bad in ("tpu", "cuda:x", "cpu:0 ", "mps"):
        with pytest.raises(UserError, match="cpu or cuda"):
            check_device(bad)
    no_gpu = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0))
    with pytest.raises(UserError, match="no CUDA device"):
        check_device("cuda", no_gpu)
    one_gpu = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1))
    check_device("cuda:0", one_gpu)
    with pytest.raises(UserError, match="1 CUDA device"):
        check_device("cuda:1", one_gpu)


@pytest.mark.parametrize("key,value", [("llama.block_count", float("inf")), ("llama.embedding_length", float("nan"))])
def test_measure_reads_gguf_hyper_parameters_safely(tmp_path, key, value):
    """measure's GGUF path (GGUFReader + int()) raised OverflowError/ValueError on these (issue 10)."""
    import gguf

    from tokspeed.measure.weights import gguf_tensor_shapes

    p = write_llama_gguf(tmp_path / "f.gguf", extra_kv={key: (value, gguf.GGUFValueType.FLOAT32)})
    with pytest.raises(UserError, match="whole number"):
        gguf_tensor_shapes(p)
