"""Attention-pattern views (`induction show`, induction.scores.views) and the notebook display
helper."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import induction
from induction.commands.main import app
from induction.errors import InputError
from induction.scores.views import (
    parse_heads,
    show_patterns,
    stripe_cells_matching,
    stripe_cells_repeated,
    token_label,
    token_labels,
)

runner = CliRunner()


@pytest.fixture(scope="module")
def grown():
    return induction.load_model("grown", device="cpu")


def test_parse_heads():
    assert parse_heads("L5H1, l0h3", 8, 4) == [(5, 1), (0, 3)]
    with pytest.raises(InputError, match="L5H1 is named twice"):  # no silent de-duplication
        parse_heads("L5H1, l0h3,5.1", 8, 4)
    assert parse_heads([(1, 2), "L2H0"], 8, 4) == [(1, 2), (2, 0)]
    with pytest.raises(InputError, match="L99H0 is out of range: the model has layers 0-7"):
        parse_heads("L99H0", 8, 4)
    with pytest.raises(InputError, match="malformed"):
        parse_heads("head5", 8, 4)
    with pytest.raises(InputError, match="no heads"):
        parse_heads(" , ", 8, 4)


def test_stripes():
    # [P] r r with T = 3: positions 4..6 attend to 2..4
    assert stripe_cells_repeated(3) == [(4, 2), (5, 3), (6, 4)]
    # a b c a b: query 3 ('a') -> key 1 ('b' after the earlier 'a'); query 4 ('b') -> key 2
    assert stripe_cells_matching([0, 7, 8, 9, 7, 8]) == [(4, 2), (5, 3)]
    assert stripe_cells_matching([5, 5, 5]) == [(1, 1), (2, 1), (2, 2)]


class _BPE:
    """Byte-level BPE stand-in: decode gives text, a lone byte decodes to U+FFFD."""

    vocab = {0: "Ġthe", 1: "Ċ", 2: "â", 3: "▁cat", 4: "the"}
    text = {0: " the", 1: "\n", 2: "\ufffd", 3: " cat", 4: "the"}

    def decode(self, ids):
        return self.text[ids[0]]

    def convert_ids_to_tokens(self, i):
        return self.vocab[i]


def test_token_labels_are_readable_and_unique():
    tok = _BPE()
    assert token_label(tok, 0) == "·the"
    assert token_label(tok, 1) == "\\n"
    assert token_label(tok, 2) == "â"  # raw entry when the id decodes to a broken byte
    tok.text[3] = ""
    assert token_label(tok, 3) == "·cat"  # SentencePiece marker
    labels = token_labels(tok, [4, 4, 0])
    assert labels == ["0:the", "1:the", "2:·the"] and len(set(labels)) == 3


def test_repeated_prompt_view(grown):
    fig = show_patterns(grown, "L4H1,L5H2", seq_len=8)
    heat = [t for t in fig.data if t.type == "heatmap"]
    stripe = [t for t in fig.data if t.type == "scatter"]
    assert len(heat) == 2 and len(stripe) == 2 and len(heat[0].x) == 17
    assert len(stripe[0].x) == 8  # one stripe cell per second-copy query
    assert stripe[0].y[0] == heat[0].y[9] and stripe[0].x[0] == heat[0].x[2]
    assert [b["label"] for b in fig.layout.updatemenus[0].buttons] == ["L4H1", "L5H2"]
    assert "stripe attention" in fig.layout.title.text
    assert fig.layout.meta["heads"] == ["L4H1", "L5H2"]
    grid = show_patterns(grown, ["L4H1", "L5H2"], prompt="a b c a b c", layout="grid")
    assert [a.text.split(":")[0] for a in grid.layout.annotations][:2] == ["L4H1", "L5H2"]


def test_long_labels_fit_and_the_legend_stays_off_the_key_axis(grown, monkeypatch, tmp_path):
    """SmolLM2's labels ("0:<|im_start|>"): the margins hold the longest (none cut), and the
    legend sits inside the plot's empty top-right corner (keys after the query), not below
    the plot between the rotated key labels and the axis title."""
    from induction.figures.plots import save_figure
    from induction.scores import views

    plain = views.token_labels

    def long_labels(tok, ids):
        return ["0:<|im_start|>"] + plain(tok, ids)[1:]

    monkeypatch.setattr(views, "token_labels", long_labels)
    for layout in ("dropdown", "grid"):
        fig = show_patterns(grown, "L4H1,L5H2", seq_len=8, layout=layout)
        lay = fig.layout
        size = lay.xaxis.tickfont.size
        longest = max(len(s) for s in fig.data[0].x)
        assert longest == len("0:<|im_start|>")
        need = 0.6 * size * longest + 30  # ~0.6 em a character, then the axis title
        assert lay.margin.b >= need and lay.margin.l >= need
        assert lay.xaxis.automargin and lay.yaxis.automargin
        legend = lay.legend
        assert legend.orientation != "h" and 0 <= legend.x <= 1 and 0 <= legend.y <= 1
        assert (legend.xanchor, legend.yanchor) == ("right", "top")
    assert save_figure(fig, tmp_path / "v.png") is None


def test_errors(grown):
    with pytest.raises(InputError, match="empty prompt"):
        show_patterns(grown, "L0H0", prompt="  ")
    with pytest.raises(InputError, match="context is 256"):
        show_patterns(grown, "L0H0", prompt="a " * 300)
    with pytest.raises(InputError, match="layout"):
        show_patterns(grown, "L0H0", layout="tabs")


def test_cli_writes_self_contained_html(tmp_path, one_line_error):
    out = tmp_path / "view.html"
    result = runner.invoke(
        app, ["show", "grown", "--heads", "L4H1,L5H2", "--seq-len", "6", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # diagnostics, "wrote" included, go to stderr
    assert result.stderr.strip() == f"wrote {out} (L4H1, L5H2; 13 tokens)"
    html = out.read_text()
    assert "<script src=" not in html and len(html) > 1_000_000  # plotly.js embedded
    assert "induction stripe" in html
    for args, fragment in (
        (["--heads", "L99H0"], "L99H0 is out of range"),
        (["--heads", "L1H0", "--prompt", ""], "empty prompt"),
        (["--heads", "L1H0", "--prompt", "a " * 300], "context"),
        (["--heads", "L1H0", "--out", str(tmp_path / "v.txt")], ".html or .png"),
    ):
        args = args if "--out" in args else [*args, "--out", str(out)]
        one_line_error(runner.invoke(app, ["show", "grown", *args]), fragment)


@pytest.mark.parametrize(
    "model, heads, fragments",
    [
        ("grown", "L99H0", ["L99H0 is out of range", "layers 0-"]),  # zoo: its config.json
        (None, "L2H0", ["L2H0 is out of range: the model has layers 0-1 and heads 0-3"]),
        (None, "L1H4", ["L1H4 is out of range"]),
        (None, "head5", ["malformed head 'head5'"]),
        ("org/not-downloaded", "head5", ["malformed head 'head5'"]),  # hub: syntax only
    ],
)
def test_cli_checks_heads_before_loading(
    model, heads, fragments, tiny_llama_dir, tmp_path, monkeypatch, one_line_error
):
    """A bad --heads fails at once, from config.json, not after a load of the model."""
    import induction.models.loading

    def no_load(*args, **kwargs):
        raise AssertionError("loaded")

    monkeypatch.setattr(induction.models.loading, "load_model", no_load)
    model = str(tiny_llama_dir) if model is None else model
    out = tmp_path / "v.html"
    result = runner.invoke(app, ["show", model, "--heads", heads, "--out", str(out)])
    one_line_error(result, *fragments)
    assert not out.exists()


def test_notebook_show_attaches_a_static_png(monkeypatch):
    import plotly.graph_objects as go

    import induction.figures.plots as plots

    monkeypatch.setattr(plots, "_in_ipython", lambda: True)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append(obj))
    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]), layout={"title": "t"})
    monkeypatch.setattr(plots, "static_png", lambda fig, scale=2: b"\x89PNG fake")
    plots.show(fig)
    (bundle,) = shown
    assert set(bundle) == {"application/vnd.plotly.v1+json", "image/png", "text/plain"}
    assert "text/html" not in bundle  # GitHub and nbconvert would pick it over the PNG
    monkeypatch.setattr(plots, "static_png", lambda fig, scale=2: None)
    with pytest.warns(UserWarning, match="kaleido"):
        bundle = plots.mimebundle(fig)
    assert "image/png" not in bundle and "application/vnd.plotly.v1+json" in bundle


def test_show_in_a_plain_script_writes_one_line(monkeypatch, capsys):
    """Outside IPython, show(fig) prints one short note (not the figure's JSON) and opens a
    browser only when asked."""
    import plotly.graph_objects as go

    import induction.figures.plots as plots

    assert not plots._in_ipython()  # pytest is a plain script

    def no_bundle(*args, **kwargs):
        raise AssertionError("bundle built")

    monkeypatch.setattr(plots, "mimebundle", no_bundle)
    fig = go.Figure(go.Heatmap(z=[[0.5] * 200] * 200), layout={"title": "big"})
    plots.show(fig)
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("note: not in a notebook") and "save_figure" in line
    assert len(line) < 200
    opened = []
    monkeypatch.setattr(go.Figure, "show", lambda self, *a, **k: opened.append(k))
    plots.show(fig, browser=True)
    assert opened == [{"renderer": "browser"}]
    assert capsys.readouterr().err == ""


def test_static_png_with_or_without_kaleido():
    """kaleido when it and Chromium are installed, matplotlib otherwise: always a PNG
    (tests/induction/figures/test_static.py checks the fallback itself)."""
    import plotly.graph_objects as go

    from induction.figures.plots import static_png

    data = static_png(go.Figure(go.Bar(y=[1, 2])), scale=1)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_prompt_longer_than_the_context_is_one_error_and_no_warning(capfd):
    """SH06: the length is refused in one line; transformers' own "Token indices sequence
    length" warning is not printed before it."""
    from induction import load_model
    from induction.errors import InputError
    from induction.scores.views import user_prompt_ids

    loaded = load_model("lidas8", device="cpu")
    with pytest.raises(InputError, match="context is 256; shorten it"):
        user_prompt_ids(loaded, "a b c " * 400)
    captured = capfd.readouterr()
    assert "Token indices" not in captured.err + captured.out
