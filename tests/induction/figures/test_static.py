"""Static PNGs without kaleido's browser: the matplotlib fallback (induction.figures.static), the
notebook bundle and ``--plot x.png`` (real PNG bytes, or exit 2 and nothing written)."""

from __future__ import annotations

import base64
import io
import json
import re
import struct
import sys

import pandas as pd
import pytest

import induction.figures.plots as plots
from induction.errors import InputError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (after checking the magic bytes)."""
    assert data[:8] == PNG_MAGIC, data[:40]
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def inked(data: bytes) -> float:
    """The share of pixels that are not white: a drawn figure, not a blank canvas."""
    from matplotlib.image import imread

    rgb = imread(io.BytesIO(data), format="png")[..., :3]
    return float((rgb.min(axis=-1) < 0.95).mean())


@pytest.fixture
def no_kaleido(monkeypatch):
    """kaleido installed but its Chrome/Chromium missing (what a fresh machine has)."""
    monkeypatch.setattr(plots, "_kaleido_png", lambda fig, scale: (None, "no Chrome found"))


def scan_table() -> pd.DataFrame:
    rows = [
        {
            "layer": layer,
            "head": head,
            "block_layer": layer % 2,
            "pass": layer // 2,
            "induction": (layer * 4 + head) / 16,
            "induction_std": 0.02,
            "induction_ci_lo": (layer * 4 + head) / 16 - 0.05,
            "induction_ci_hi": (layer * 4 + head) / 16 + 0.04,
        }
        for layer in range(4)
        for head in range(4)
    ]
    df = pd.DataFrame(rows)
    df.attrs.update(model="tiny", seq_len=8, seeds=(0, 1), batch=2)
    return df


def heatmap_figure():
    return plots.heatmap(scan_table())  # also the looped labels: a "pass" column


def bar_figure():
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, ys in (("top heads", [0.5, 0.2, -0.1]), ("random heads", [0.1, 0.05, 0.0])):
        fig.add_bar(
            name=name,
            x=["copy", "fact", "math"],
            y=ys,
            error_y={"type": "data", "array": [0.05, 0.03, 0.02]},
        )
    fig.update_layout(barmode="group", title="grouped bars", yaxis_title="drop")
    return fig


def scatter_figure():
    import plotly.graph_objects as go

    fig = go.Figure()
    for k in range(3):
        fig.add_scatter(x=[0, 1, 2, 3], y=[k, k + 1, k * 2, 3], mode="lines+markers", name=f"L{k}")
    fig.update_layout(title="scatter", xaxis_title="step", yaxis_title="score")
    return fig


def subplots_figure():
    from induction.scores.depth import DepthAngles, depth_figure

    results = [
        DepthAngles(f"m{k}", [30.0, 40, 50], [2.0, 3, 4], [80.0, 70, 90], [5.0, 5, 5], 10)
        for k in range(2)
    ]
    return depth_figure(results)


def facets_figure():
    import plotly.express as px

    df = pd.DataFrame(
        {"x": [0, 1, 2, 3], "y": [1, 0, 2, 1], "c": [0.1, 0.5, 0.9, 0.3], "f": list("aabb")}
    )
    return px.scatter(df, x="x", y="y", color="c", facet_col="f", title="facets")


FIGURES = {
    "heatmap": heatmap_figure,
    "bar": bar_figure,
    "scatter": scatter_figure,
    "subplots": subplots_figure,
    "facets": facets_figure,
}


@pytest.mark.parametrize("kind", list(FIGURES))
def test_fallback_draws_each_kind_of_figure(kind, no_kaleido):
    fig = FIGURES[kind]()
    data = plots.static_png(fig, scale=1)
    width, height = png_size(data)
    assert (width, height) == (fig.layout.width or 700, fig.layout.height or 500)
    assert 5_000 < len(data) < 2_000_000
    assert inked(data) > 0.05
    assert png_size(plots.static_png(fig, scale=2)) == (2 * width, 2 * height)


def test_fallback_reads_titles_ticks_colour_bar_and_legend():
    """What the renderer puts on the matplotlib figure, read back from it."""
    from induction.figures.static import _Renderer

    r = _Renderer(heatmap_figure(), 1)
    r.png()
    (ax, bar_ax) = r.figure.axes  # the heatmap and its colour bar
    assert r.figure._suptitle.get_text().startswith("induction score")
    assert ax.get_xlabel() == "head" and ax.get_ylabel().startswith("layer")
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["0 (b0 p0)", "1 (b1 p0)"]
    assert ax.yaxis_inverted()  # layer 0 at the top, as in plotly
    assert bar_ax.get_ylabel() == "induction"
    r = _Renderer(scatter_figure(), 1)
    r.png()
    (legend,) = r.figure.legends
    assert [t.get_text() for t in legend.get_texts()] == ["L0", "L1", "L2"]
    r = _Renderer(facets_figure(), 1)
    r.png()
    left, right = r.figure.axes[:2]
    assert left.get_title() == "f=a" and right.get_title() == "f=b"
    assert left.get_shared_y_axes().joined(left, right)  # px facets match their y axes


def test_legend_shows_an_outline_of_its_own_colour():
    """A legend-only entry for an outline (the lineage graph's top heads: white, red edge)
    shows the red edge, not the fill colour drawn twice."""
    import plotly.graph_objects as go

    from induction.figures.static import _Renderer

    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="markers", name="head"))
    marker = {"color": "white", "size": 15, "line": {"color": "#d62728", "width": 2.5}}
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="top", marker=marker))
    r = _Renderer(fig, 1)
    r.png()
    (legend,) = r.figure.legends
    handles = dict(zip((t.get_text() for t in legend.get_texts()), legend.legend_handles))
    assert handles["top"].get_markeredgecolor() == "#d62728"
    assert handles["top"].get_markerfacecolor() != handles["top"].get_markeredgecolor()


def test_label_text_keeps_tokens_that_look_like_tags():
    from induction.figures.static import plain

    assert plain("title<br><sup>L1H0: stripe 0.4</sup>") == "title\nL1H0: stripe 0.4"
    assert plain("0 <|endoftext|>") == "0 <|endoftext|>"  # a token label, not markup
    assert plain("<b>a</b> &amp; <span style='color:red'>b</span>") == "a & b"


def test_unsupported_trace_is_a_note_not_a_file(no_kaleido, tmp_path):
    import plotly.graph_objects as go

    from induction.figures.static import UnsupportedFigure, render_png

    pie = go.Figure(go.Pie(values=[1, 2]))
    with pytest.raises(UnsupportedFigure, match="pie"):
        render_png(pie)
    assert plots.static_png(pie) is None
    note = plots.save_figure(pie, tmp_path / "pie.png")
    assert "not written" in note and "pie" in note
    assert not (tmp_path / "pie.png").exists()
    with pytest.warns(UserWarning, match="no static PNG"):
        bundle = plots.mimebundle(pie)
    assert "image/png" not in bundle and "application/vnd.plotly.v1+json" in bundle


def test_save_figure_writes_a_png_without_kaleido(no_kaleido, tmp_path):
    path = tmp_path / "bar.png"
    assert plots.save_figure(bar_figure(), path) is None
    png_size(path.read_bytes())


def test_mimebundle_carries_a_png_without_kaleido(no_kaleido):
    bundle = plots.mimebundle(heatmap_figure())
    assert set(bundle) == {"application/vnd.plotly.v1+json", "image/png", "text/plain"}
    png_size(base64.b64decode(bundle["image/png"]))


def test_circuit_plot_writes_png_or_raises(no_kaleido, tmp_path, monkeypatch):
    import torch

    from induction.circuits.effects import EffectsResult

    result = EffectsResult(
        model="tiny",
        mode="zero",
        reference="task",
        clean_loss=1.0,
        effect=torch.randn(3, 4),
        effect_se=torch.zeros(3, 4),
        atp=torch.randn(3, 4),
        corr=None,
    )
    result.plot(tmp_path / "e.png")
    png_size((tmp_path / "e.png").read_bytes())
    monkeypatch.setattr(plots, "png_bytes", lambda fig, scale=2: (None, "cannot draw"))
    with pytest.raises(InputError, match="not written"):
        result.plot(tmp_path / "f.png")
    assert not (tmp_path / "f.png").exists()


@pytest.fixture
def kernel_manager(tmp_path):
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec_dir = tmp_path / "kernels" / "induction-static-test"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "induction-workbench (tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    return KernelManager(kernel_name="induction-static-test", kernel_spec_manager=specs)


def test_executed_notebook_exports_a_static_image(kernel_manager, monkeypatch):
    """A notebook cell calling plots.show, executed with nbclient and exported with nbconvert
    (what `jupyter nbconvert --to html --execute` does): the HTML holds a PNG image, drawn here
    without kaleido's browser."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    monkeypatch.setenv("INDUCTION_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    source = (
        "import warnings\n"
        "import plotly.graph_objects as go\n"
        "from induction.figures import plots\n"
        "warnings.simplefilter('error')  # no 'install kaleido' warning\n"
        "plots.show(go.Figure(go.Bar(x=['a', 'b'], y=[1, 2]), layout={'title': 'bars'}))\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbclient.NotebookClient(nb, km=kernel_manager, timeout=120).execute()
    (out,) = nb.cells[0].outputs
    assert out["output_type"] == "display_data", out
    assert {"image/png", "application/vnd.plotly.v1+json"} <= set(out["data"])
    png_size(base64.b64decode(out["data"]["image/png"]))
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert re.search(r'<img [^>]*src="data:image/png;base64,', body)


def test_html_of_the_same_figure_is_the_same_file(tmp_path):
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    plots.save_figure(bar_figure(), first)
    plots.save_figure(bar_figure(), second)
    assert first.read_bytes() == second.read_bytes()  # no random div id
    other = bar_figure()
    other.update_layout(title="another")
    plots.save_figure(other, second)
    assert first.read_bytes() != second.read_bytes()
