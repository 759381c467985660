"""Figures of a scan table: a layer x head heatmap and a ranked bar chart (plotly).

``save_figure`` writes ``.html`` (self-contained: opens offline) or ``.png``. A PNG comes from
kaleido when kaleido and a browser for it (Chrome/Chromium) are installed, else from
matplotlib (:mod:`induction.figures.static`, a dependency of the workbench), so it needs no browser;
a figure neither can draw is not written, and a one-line note says so.

``show`` displays a figure in a notebook as one output carrying both the interactive figure
(``application/vnd.plotly.v1+json``, drawn by JupyterLab, Notebook 7 and VS Code) and a static
``image/png`` (the same PNG as ``save_figure``'s), which is what GitHub's notebook view and an
nbconvert HTML export show, since neither runs plotly's JavaScript (docs/views.md). In a plain
script it prints one line on how to save the figure instead (or opens it in the browser when
asked).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from induction.errors import InputError
from induction.heads import head_label

FIGURE_SUFFIXES = (".html", ".png")


def _check_score(df, score: str) -> None:
    if score not in df.columns:
        raise InputError(f"the table has no {score!r} column; scored: {_scored(df)}")


def _scored(df) -> str:
    names = [c for c in df.columns if f"{c}_std" in df.columns]
    return ", ".join(names) or "none"


def _layer_labels(df) -> dict[int, str]:
    labels = {}
    looped = {"block_layer", "pass"} <= set(df.columns)
    cols = ["layer", "block_layer", "pass"] if looped else ["layer"]
    # plain tuples: itertuples' named rows rename the keyword column "pass" to "_2"
    for row in df.drop_duplicates("layer")[cols].itertuples(index=False, name=None):
        layer = int(row[0])
        labels[layer] = f"{layer} (b{int(row[1])} p{int(row[2])})" if looped else str(layer)
    return labels


def _title(df, score: str, title: str | None) -> str:
    if title:
        return title
    a = df.attrs
    bits = [str(a["model"])] if a.get("model") else []
    if a.get("seq_len"):
        bits.append(f"T={a['seq_len']} x{a.get('n_repeats', 2)}")
    if a.get("seeds"):
        bits.append(f"{a.get('batch')} prompts x {len(a['seeds'])} seeds")
    if a.get("convention") and score in ("induction", "duplicate_token", "previous_token"):
        bits.append(a["convention"])
    return f"{score} score" + (f" — {', '.join(bits)}" if bits else "")


def heatmap(df, score: str = "induction", title: str | None = None):
    """Layer (rows, layer 0 at the top) x head heatmap of ``score``; hover shows the spread."""
    import numpy as np
    import plotly.graph_objects as go

    _check_score(df, score)
    layers = sorted(int(x) for x in df["layer"].unique())
    heads = sorted(int(x) for x in df["head"].unique())
    li = {lay: i for i, lay in enumerate(layers)}
    z = np.full((len(layers), len(heads)), np.nan)
    std = np.full_like(z, np.nan)
    std_col = f"{score}_std"
    for row in df.itertuples(index=False):
        i, j = li[int(row.layer)], int(getattr(row, "head"))
        z[i, j] = getattr(row, score)
        if std_col in df.columns:
            std[i, j] = getattr(row, std_col)
    labels = _layer_labels(df)
    signed = score == "copying"
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(h) for h in heads],
            y=[labels[lay] for lay in layers],
            customdata=std,
            colorscale="RdBu" if signed else "Viridis",
            zmin=-1 if signed else 0,
            zmax=1,
            colorbar={"title": score},
            hovertemplate="layer %{y}, head %{x}<br>"
            + score
            + " %{z:.3f} ± %{customdata:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=_title(df, score, title),
        xaxis_title="head",
        yaxis_title="layer" + (" (block layer, pass)" if "pass" in df.columns else ""),
        yaxis={"autorange": "reversed", "type": "category"},
        xaxis={"type": "category"},
        template="plotly_white",
        height=max(360, 28 * len(layers) + 160),
    )
    return fig


def ranked_bar(df, score: str = "induction", top: int = 20, title: str | None = None):
    """The ``top`` heads by ``score``, best first, with 95% CI error bars across seeds."""
    import plotly.graph_objects as go

    _check_score(df, score)
    if top < 1:
        raise InputError(f"top must be >= 1, got {top}")
    best = df.sort_values(score, ascending=False).head(top)
    labels = [
        head_label(int(r.layer), int(getattr(r, "head"))) for r in best.itertuples(index=False)
    ]
    error = None
    lo, hi = f"{score}_ci_lo", f"{score}_ci_hi"
    if lo in best.columns and best[lo].notna().any():
        error = {
            "type": "data",
            "symmetric": False,
            "array": (best[hi] - best[score]).fillna(0).to_list(),
            "arrayminus": (best[score] - best[lo]).fillna(0).to_list(),
        }
    fig = go.Figure(go.Bar(x=labels, y=best[score].to_list(), error_y=error))
    if score == "induction":
        from induction.heads import INDUCTION_THRESHOLD

        fig.add_hline(
            y=INDUCTION_THRESHOLD,
            line_dash="dash",
            annotation_text=f"{INDUCTION_THRESHOLD} (induction head)",
            annotation_yshift=4,  # above the dashed line, not on it
        )
    fig.update_layout(
        title=_title(df, score, title) + f" — top {len(best)}",
        xaxis_title="head",
        yaxis_title=score,
        xaxis={"type": "category"},
        template="plotly_white",
    )
    return fig


def save_figure(fig: Any, path: str | Path) -> str | None:
    """Write ``fig`` to ``path`` (.html or .png). Returns a note, and writes nothing, when no
    PNG can be made (:func:`png_bytes`)."""
    from induction.store.io import write_bytes, write_text

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        raise InputError(f"cannot write a figure to {path.name!r}: use a .html or .png file name")
    if suffix == ".html":
        import hashlib

        # plotly names the figure's div with a random uuid: a name from the figure's content
        # makes the same figure the same file (a rerun that changes nothing leaves no diff)
        div_id = "fig-" + hashlib.sha256(fig.to_json().encode()).hexdigest()[:16]
        write_text(path, fig.to_html(include_plotlyjs=True, full_html=True, div_id=div_id))
        return None
    data, reason = png_bytes(fig, scale=2)
    if data is None:
        return f"PNG export unavailable, {path} not written ({reason}); use a .html path"
    write_bytes(path, data)
    return None


def static_png(fig: Any, scale: float = 2) -> bytes | None:
    """The figure as PNG bytes (kaleido, else matplotlib), or None when neither can draw it."""
    return png_bytes(fig, scale=scale)[0]


def png_bytes(fig: Any, scale: float = 2) -> tuple[bytes | None, str]:
    """``(PNG bytes, "")``, or ``(None, why)`` when no PNG can be made.

    kaleido first, when it and its browser work (plotly's own renderer); otherwise the figure
    is drawn with matplotlib (:func:`induction.figures.static.render_png`), which needs no
    browser."""
    data, reason = _kaleido_png(fig, scale)
    if data is not None:
        return data, ""
    reasons = [f"kaleido: {reason}"] if reason else []
    try:
        from induction.figures.static import render_png

        return render_png(fig, scale=scale), ""
    except ImportError as e:
        reasons.append(f"matplotlib: {_first_sentence(e)}")
    except Exception as e:  # a trace type the fallback does not draw, or a malformed figure
        reasons.append(f"matplotlib fallback: {_first_sentence(e)}")
    return None, "; ".join(reasons)


def _kaleido_png(fig: Any, scale: float) -> tuple[bytes | None, str]:
    """kaleido's PNG, or ``(None, why)``: ``why`` is empty when kaleido is not installed."""
    import importlib.util

    if importlib.util.find_spec("kaleido") is None:
        return None, ""
    try:
        return fig.to_image(format="png", scale=scale), ""
    except Exception as e:  # no Chrome/Chromium for kaleido, or an old kaleido
        return None, _first_sentence(e)


def _first_sentence(e: BaseException) -> str:
    return " ".join(str(e).split()).split(". ")[0][:160] or type(e).__name__


def show(fig: Any, *, png: bool = True, scale: float = 2, browser: bool = False) -> None:
    """Display ``fig`` in a notebook: the interactive figure plus a static PNG of it
    (:func:`mimebundle`). Returns nothing, so a cell ending in ``show(fig)`` shows the figure
    once.

    ``browser=True`` opens the figure in the web browser instead (plotly's ``browser``
    renderer). Outside IPython (a plain script) there is nowhere to display it: without
    ``browser`` one line on stderr says how to save it, and nothing else is written."""
    if browser:
        fig.show(renderer="browser")
        return
    if not _in_ipython():
        import sys

        print(
            "note: not in a notebook, so the figure is not shown; write it with "
            "induction.figures.plots.save_figure(fig, 'figure.html') or open it with "
            "show(fig, browser=True)",
            file=sys.stderr,
        )
        return
    from IPython.display import display

    display(mimebundle(fig, png=png, scale=scale), raw=True)


def _in_ipython() -> bool:
    """Whether an IPython kernel or shell runs this code (Jupyter, VS Code, ``ipython``)."""
    import sys

    if "IPython" not in sys.modules:  # a kernel imports it first; a script need not load it
        return False
    from IPython import get_ipython

    return get_ipython() is not None


def mimebundle(fig: Any, *, png: bool = True, scale: float = 2) -> dict:
    """One ``display_data`` bundle: ``application/vnd.plotly.v1+json`` (interactive where the
    front end renders plotly), ``image/png`` (GitHub, nbconvert HTML, any viewer without
    plotly's JavaScript) and ``text/plain``. The PNG comes from kaleido, or from matplotlib
    without kaleido's browser (:func:`png_bytes`); only when neither can draw the figure is
    it left out (with a warning), and the figure stays interactive only."""
    import base64
    import warnings

    import plotly.io as pio

    bundle = dict(pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_dict()))
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else "figure"
    bundle["text/plain"] = f"<plotly figure: {title}>"
    if png:
        data = static_png(fig, scale=scale)
        if data is None:
            warnings.warn(
                "no static PNG attached: neither kaleido (with Chrome/Chromium) nor the "
                "matplotlib fallback could draw this figure (docs/views.md)",
                stacklevel=2,
            )
        else:
            bundle["image/png"] = base64.b64encode(data).decode("ascii")
    return bundle
