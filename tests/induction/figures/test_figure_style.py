"""One figure style: every layer x head heatmap has layer 0 on top and numeric labels, axis
and legend names are words, and the threshold label sits above its line."""

from __future__ import annotations

import pandas as pd

from induction.figures.plots import heatmap, ranked_bar


def _scores(n_layers=3, n_heads=4):
    rows = [{"layer": la, "head": h, "induction": 0.1 * (la + h), "fv": 0.01 * (la - h)}
            for la in range(n_layers) for h in range(n_heads)]  # fmt: skip
    return pd.DataFrame(rows)


def _style(fig):
    y, x = fig.layout.yaxis, fig.layout.xaxis
    return (y.autorange, y.type, x.type, list(fig.data[0].y), list(fig.data[0].x))


def test_the_scan_and_fv_heatmaps_share_one_orientation_and_labels():
    from induction.circuits.fv import FVResult

    expected = ("reversed", "category", "category", ["0", "1", "2"], ["0", "1", "2", "3"])
    assert _style(heatmap(_scores())) == expected
    assert _style(FVResult("m", _scores(), {"n_tasks": 1}).plot()) == expected


def test_the_threshold_label_sits_above_its_line():
    (note,) = ranked_bar(_scores()).layout.annotations
    assert note.yanchor == "bottom" and note.yshift > 0
