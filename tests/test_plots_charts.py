"""Every chart is drawn and checked structurally: axes labels with units, series, legends, titles."""

import json

import pytest

matplotlib = pytest.importorskip("matplotlib")

from tokspeed import plots  # noqa: E402
from tokspeed.errors import UserError  # noqa: E402
from tokspeed.explain import explain  # noqa: E402
from tokspeed.plots.verbs import hw_info, prediction_journeys  # noqa: E402
from tokspeed.predict import predict  # noqa: E402


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def sweep_rows(contexts=(1024, 16384, 131072)):
    return [predict("llama-3-8b", "rtx-4090", quant="F16", prompt=0, gen=1, context=c).to_dict() for c in contexts]


def test_context_chart_structure():
    rows = sweep_rows()
    fig = plots.context_figure(rows)
    top, bottom = fig.axes[:2]
    assert top.get_ylabel() == "decode speed (tokens/s)"
    assert bottom.get_xlabel() == "context (tokens in the KV cache)"
    assert "(GB)" in bottom.get_ylabel()
    assert len(top.get_lines()) == 2
    exp = top.get_lines()[1]
    assert list(exp.get_xdata()) == [1024, 16384, 131072]
    assert list(exp.get_ydata()) == [r["decode"]["tok_s"] for r in rows]
    # stacked bars: weights then KV, heights in GB
    bars = bottom.patches
    assert len(bars) == 6
    assert bars[0].get_height() == pytest.approx(rows[0]["decode"]["weight_bytes_per_token"] / 1e9)
    assert bars[5].get_height() == pytest.approx(rows[2]["decode"]["kv_bytes_per_token"] / 1e9)
    assert set(legend_texts(bottom)) == {"weights", "KV cache"}
    # KV share annotations: ≈ half the bytes at 128K (the seeds)
    shares = [t.get_text() for t in bottom.texts]
    assert shares[0] == "KV 1%" and shares[-1] in ("KV 52%", "KV 53%", "KV 54%")


def test_roofline_chart_structure():
    pred = predict("llama-3-8b", "h100-sxm", prompt=1024, gen=1)
    hw = hw_info(pred.hw)
    fig = plots.roofline_figure(hw, prediction_journeys(pred))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOP per byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()
    roof = ax.get_lines()[0]
    ys = roof.get_ydata()
    assert max(ys) == pytest.approx(989e12)                 # the compute roof
    x0, y0 = roof.get_xdata()[0], ys[0]
    assert y0 == pytest.approx(3350e9 * x0)                  # the bandwidth slope
    labels = legend_texts(ax)
    assert "decode stages" in labels and "prefill stages" in labels
    decode = next(c for c in ax.collections if c.get_label() == "decode stages")
    prefill = next(c for c in ax.collections if c.get_label() == "prefill stages")
    ridge = 989e12 / 3350e9
    assert max(x for x, _ in decode.get_offsets()) < ridge   # decode: all left of the ridge
    assert max(x for x, _ in prefill.get_offsets()) > ridge  # prefill matmuls: right of it


def test_hardware_bars_structure():
    rows = [predict("llama-3-8b", h, quant="Q4_K_M").to_dict() for h in ("rtx-4090", "h100-sxm")]
    fig = plots.hardware_figure(rows)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "decode speed (tokens/s)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["rtx-4090", "h100-sxm"]
    assert len(ax.patches) == 4
    assert ax.patches[2].get_height() == pytest.approx(rows[0]["decode"]["tok_s"])
    assert ax.patches[0].get_height() == pytest.approx(rows[0]["decode"]["bound_tok_s"])


def test_memory_chart_structure():
    d = predict("llama-3-8b", "rtx-4090").to_dict()
    fig = plots.memory_figure(d)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "memory (GB)"
    widths = [p.get_width() for p in ax.patches]
    assert widths[0] == pytest.approx(d["memory"]["weights_bytes"] / 1e9)
    assert sum(widths) == pytest.approx(d["memory"]["total_bytes"] / 1e9)
    cap = ax.get_lines()[0].get_xdata()[0]
    assert cap == pytest.approx(24 * 2**30 / 1e9)       # 24 GiB on the decimal-GB axis: 25.77
    assert any(t.startswith("capacity 25.7698 GB") for t in legend_texts(ax))
    assert "fits" in ax.get_title()


def test_stages_chart_with_measured(tmp_path):
    run = tmp_path / "RUN.json"
    run.write_text(json.dumps({"stages": {"ffn": 0.02}}))
    e = explain("llama-3-8b", "rtx-4090", measured=run, with_levers=False).to_dict()
    fig = plots.stages_figure(e)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time per step (ms)"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "FFN gate/up/down ×32" in labels and "LM head" in labels
    shown = [s for s in e["stages"] if s["seconds"] > 0 or s["measured_s"]]
    assert len(ax.patches) == 2 * len(shown)                 # predicted + measured bar per stage
    assert sum(p.get_width() for p in ax.patches[:len(shown)]) == pytest.approx(e["total_s"] * 1e3)
    assert "measured" in legend_texts(ax)


def test_measured_vs_predicted_chart():
    fig = plots.measured_figure([{"label": "rtx-4090", "predicted": 44.0, "measured": 40.0},
                                 {"label": "m2-ultra", "predicted": 30.0, "measured": 33.0}])
    ax = fig.axes[0]
    assert ax.get_ylabel() == "decode tok/s"
    assert [t.get_text() for t in ax.texts] == ["0.91×", "1.10×"]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_save_formats(tmp_path, suffix):
    fig = plots.memory_figure(predict("llama-2-7b", "rtx-4090").to_dict())
    out = plots.save(fig, tmp_path / f"m{suffix}")
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]


def test_bad_plot_path(tmp_path):
    with pytest.raises(UserError):
        plots.check_path(tmp_path / "chart.pdf")
    with pytest.raises(UserError):
        plots.check_path(tmp_path / "missing" / "chart.png")


def test_inline_svg_has_no_prolog():
    svg = plots.to_svg(plots.memory_figure(predict("llama-2-7b", "rtx-4090").to_dict()))
    assert svg.startswith("<svg") and "<?xml" not in svg


def test_run_file_plot(tmp_path):
    from tokspeed.plots.verbs import plot_run, run_pairs

    run = {"points": [{"batch": 1, "context": 0, "decode_tok_s": 40.0, "predicted": {"tok_s": 44.0}},
                      {"batch": 1, "context": 4096, "decode_tok_s": 36.0, "predicted": {"tok_s": 40.0}},
                      {"batch": 1, "context": 8192, "decode_tok_s": None, "predicted": {"tok_s": 38.0}}]}
    pairs = run_pairs(run)
    assert [p["measured"] for p in pairs] == [40.0, 36.0]
    out = plot_run(run, tmp_path / "run.png")
    assert out.stat().st_size > 1000
    with pytest.raises(UserError):
        plot_run({"points": []}, tmp_path / "empty.png")
