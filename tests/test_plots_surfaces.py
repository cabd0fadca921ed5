"""Charts as people read them (issue #14): nothing covers the ridge label, every colour is in the legend, a
device without a FLOP/s figure gets no invented roof, every sweep series is drawn, compare shows ranges and
marks what does not fit, legends sit off the lines, the chosen context is marked."""

import pytest

pytest.importorskip("matplotlib")

from tokspeed import plots  # noqa: E402
from tokspeed.hardware.spec import Hardware  # noqa: E402
from tokspeed.plots.verbs import hw_info, prediction_journeys  # noqa: E402
from tokspeed.predict import predict  # noqa: E402

NO_FLOPS = Hardware(id="no-flops", name="No FLOP/s figure", kind="gpu", vendor="test", memory_gb=24,
                    bandwidth_gbps=500)


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _renderer(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _display_points(ax, collection):
    return ax.transData.transform(collection.get_offsets())


def test_ridge_label_is_clear_of_every_marker():
    pred = predict("llama-3-8b", "rtx-4090", prompt=1024, gen=1)
    fig = plots.roofline_figure(hw_info(pred.hw), prediction_journeys(pred))
    ax = fig.axes[0]
    r = _renderer(fig)
    label = next(t for t in ax.texts if t.get_text().startswith("ridge"))
    box = label.get_window_extent(r).expanded(1.05, 1.2)
    for c in ax.collections:
        for x, y in _display_points(ax, c):
            assert not box.contains(x, y), f"{c.get_label()} marker under the ridge label"
    # 165.2 TFLOPS / 1008 GB/s = 164 FLOP/B (the RTX 4090's ridge, by hand)
    assert label.get_text() == "ridge 164 FLOP/B"


def test_roofline_legend_names_both_bound_colours():
    pred = predict("llama-3-8b", "rtx-4090", prompt=1024, gen=1)
    ax = plots.roofline_figure(hw_info(pred.hw), prediction_journeys(pred)).axes[0]
    texts = legend_texts(ax)
    assert "memory-bound" in texts and "compute-bound" in texts
    assert "prefill stages" in texts and "decode stages" in texts


def test_roofline_without_flops_has_no_roof_and_no_prefill():
    pred = predict("llama-3-8b", NO_FLOPS, prompt=512, gen=1)
    info = hw_info(pred.hw)
    assert info["matmul_tflops"] is None
    ax = plots.roofline_figure(info, prediction_journeys(pred)).axes[0]
    roof = ax.get_lines()[0]
    xs, ys = roof.get_xdata(), roof.get_ydata()
    assert ys[-1] == pytest.approx(500e9 * xs[-1])      # still the bandwidth slope at the right end: no roof
    assert all("TFLOPS" not in t for t in legend_texts(ax))
    assert any("FLOP/s unknown" in t for t in legend_texts(ax))
    assert not any(c.get_label() == "prefill stages" for c in ax.collections)
    assert not [t for t in ax.texts if t.get_text().startswith("ridge")]


def test_sweep_plot_draws_every_series(tmp_path):
    rows = [predict("llama-3-8b", "rtx-4090", quant=q, batch=b, prompt=0, gen=1, context=c).to_dict()
            for q in ("F16", "Q4_K_M") for b in (1, 8) for c in (1024, 32768)]
    fig = plots.context_figure(rows)
    top = fig.axes[0]
    labels = legend_texts(top)
    for q in ("F16", "Q4_K_M"):
        for b in (1, 8):
            assert any(t.startswith(f"{q}, batch {b}:") for t in labels), (q, b)
    # F16 batch 8 at 32K: 16 GB weights + 8 x 4.3 GB of KV cannot fit in 24 GB -> hollow "does not fit" marker
    assert "does not fit (hypothetical)" in labels
    assert "F16, batch 1" in fig.axes[1].get_title()


def test_context_legend_is_off_the_plot_and_the_chosen_context_is_marked():
    rows = [predict("llama-3-8b", "rtx-4090", prompt=0, gen=1, context=c).to_dict() for c in (1024, 16384, 131072)]
    chosen = predict("llama-3-8b", "rtx-4090", context=8192).to_dict()
    fig = plots.context_figure(rows, chosen=chosen)
    top = fig.axes[0]
    r = _renderer(fig)
    assert top.get_legend().get_window_extent(r).y0 >= top.get_window_extent(r).y1 - 1   # above the axes
    star = [t for t in legend_texts(top) if t.startswith("this setup")]
    assert star == [f"this setup: context {8192 + 512:,}, {chosen['decode']['tok_s']:.3g} tok/s"]


def test_compare_bars_show_ranges_names_backends_and_misfits():
    preds = [predict("llama-3.1-70b", h, quant="Q4_K_M") for h in ("rtx-4090", "h100-sxm", "m4-max-40")]
    fig = plots.hardware_figure([p.to_dict() for p in preds], {p.hw.id: p.hw.name for p in preds})
    ax = fig.axes[0]
    ticks = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    assert ticks == ["NVIDIA GeForce RTX 4090", "NVIDIA H100 SXM5", "Apple M4 Max (16-CPU / 40-core GPU)"]
    assert "llama.cpp-cuda" in ax.get_title() and "llama.cpp-metal" in ax.get_title()
    # error bars span the engine model's band
    caps = [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]
    assert caps
    segs = caps[0].lines[2][0].get_segments()
    d = preds[1].to_dict()["decode"]
    assert segs[1][0][1] == pytest.approx(d["tok_s_low"]) and segs[1][1][1] == pytest.approx(d["tok_s_high"])
    # 42.5 GB of weights on a 24 GB card does not fit: hatched bar and a label that says so
    expected = ax.patches[3:6]
    assert expected[0].get_hatch() == "//" and not expected[1].get_hatch()
    assert any("DOES NOT FIT" in t.get_text() for t in ax.texts)
    assert any("does not fit" in t for t in legend_texts(ax))


def test_stage_chart_of_a_prefill_without_flops_says_unknown():
    from tokspeed.explain import explain

    e = explain("llama-3-8b", NO_FLOPS, prefill=512, with_levers=False).to_dict()
    ax = plots.stages_figure(e).axes[0]
    assert "= unknown (no FLOP/s figure" in ax.get_title()
    assert "lower bound" in ax.get_xlabel()
