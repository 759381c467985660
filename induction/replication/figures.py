"""The replication figure (plotly): the zoo's figures beside the source's (red diamonds),
point by point: the mean drop, the group means, RegBench TVD and the lineage headline."""

from __future__ import annotations

import pandas as pd

from .config import SOURCE
from .stats import group_names

SOURCE_MARK = {"color": "#d62728", "size": 13, "symbol": "diamond"}


def figure(models: pd.DataFrame, families: pd.DataFrame, title: str | None = None):
    """2 x 2 panels, one bar per family (mean ± sd over seeds), seeds as open circles:
    top-20% drop with random controls; drop per task group; clean RegBench TVD; ancestors
    holding 10 of the 12 strongest heads."""
    from plotly.subplots import make_subplots

    fams = list(families["family"])
    pos = {f: i for i, f in enumerate(fams)}
    src = dict(zip(families["family"], families["source_family"]))
    lin = SOURCE["lineage"]
    fig = make_subplots(
        rows=2,
        cols=2,
        vertical_spacing=0.16,
        subplot_titles=(
            f"mean drop, top {SOURCE['frac']:.0%} heads zeroed vs random heads",
            "mean drop per task group",
            "RegBench TVD, clean (lower is better)",
            f"ancestors holding {lin['heads']} of the {lin['top']} strongest heads",
        ),
    )

    def seeds(col, row, c, shift=0.0, show=False):
        if col not in models.columns:
            return
        fig.add_scatter(
            x=[pos[f] + shift for f in models["family"]],
            y=models[col],
            mode="markers",
            marker={"color": "#08306b", "size": 8, "symbol": "circle-open", "line": {"width": 2}},
            name="one model seed",
            text=models["model"],
            showlegend=show,
            row=row,
            col=c,
        )

    def source(key, row, c, shift=0.0, show=False):
        xs = [pos[f] + shift for f in fams if src[f] in SOURCE[key]]
        ys = [SOURCE[key][src[f]] for f in fams if src[f] in SOURCE[key]]
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="markers",
            marker=SOURCE_MARK,
            name="source",
            showlegend=show,
            row=row,
            col=c,
        )

    def bars(col, row, c, name, color, shift=0.0, width=0.38, show=True):
        fig.add_bar(
            x=[pos[f] + shift for f in fams],
            y=families[col],
            width=width,
            error_y={
                "type": "data",
                "array": (
                    families[f"{col}_std"] if f"{col}_std" in families else families[col] * 0
                ).fillna(0),
            },
            name=name,
            marker_color=color,
            showlegend=show,
            row=row,
            col=c,
        )

    if {"drop_cand_acc", "ctrl_cand_acc", "shaped_cand_acc"} <= set(models.columns):
        # the verdict's readout (docs/replication.md) against both control shapes
        by_fam = models.groupby("family")
        for col, name, color, shift in (
            ("drop_cand_acc", "top 20% by induction (cand_acc)", "#1f77b4", -0.27),
            ("ctrl_cand_acc", "uniform random heads", "#aaaaaa", 0.0),
            ("shaped_cand_acc", "layer-shaped random heads", "#636363", 0.27),
        ):
            fig.add_bar(
                x=[pos[f] + shift for f in fams],
                y=[by_fam[col].mean()[f] for f in fams],
                error_y={"type": "data", "array": [by_fam[col].std().fillna(0)[f] for f in fams]},
                width=0.26, name=name, marker_color=color, row=1, col=1,
            )  # fmt: skip
        seeds("drop_cand_acc", 1, 1, -0.27, show=True)
        source("drop", 1, 1, -0.27, show=True)
    else:
        bars("drop", 1, 1, "top 20% by induction", "#1f77b4", -0.2)
        bars("ctrl_pooled", 1, 1, "random heads (pooled)", "#aaaaaa", 0.2)
        seeds("drop", 1, 1, -0.2, show=True)
        source("drop", 1, 1, -0.2, show=True)
    groups = group_names(families)
    palette = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
    width = 0.8 / max(len(groups), 1)
    for i, g in enumerate(groups):
        shift = -0.4 + width * (i + 0.5)
        bars(f"drop:{g}", 1, 2, g, palette[i % len(palette)], shift, width)
    if "tvd_clean" in families.columns:
        bars("tvd_clean", 2, 1, "TVD clean", "#2ca02c", 0.0, 0.5, show=False)
        seeds("tvd_clean", 2, 1)
        source("tvd", 2, 1)
    bars("src_ancestors", 2, 2, "ancestors", "#98df8a", 0.0, 0.5, show=False)
    seeds("src_ancestors", 2, 2)
    lidas = [pos[f] for f in fams if src[f] == "lidas"]
    fig.add_scatter(
        x=lidas,
        y=[lin["ancestors"]] * len(lidas),
        mode="markers",
        marker=SOURCE_MARK,
        showlegend=False,
        name="source",
        row=2,
        col=2,
    )
    for r in (1, 2):
        for c in (1, 2):
            fig.update_xaxes(tickvals=list(range(len(fams))), ticktext=fams, row=r, col=c)
    fig.update_yaxes(title_text="drop (positive = worse)", row=1, col=1)
    fig.update_yaxes(title_text="drop", row=1, col=2)
    fig.update_yaxes(title_text="TVD", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(title_text="ancestors", rangemode="tozero", row=2, col=2)
    fig.update_layout(
        barmode="overlay",
        title=title or "Replication: the zoo beside the source (red diamonds)",
        template="plotly_white",
        height=820,
        width=1100,
        legend={"orientation": "h", "y": -0.08},
    )
    return fig
