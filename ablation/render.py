"""Rendering of ablation reports: the rich table on a console and the plotly bar chart.

Kept apart from :mod:`ablation.report`, which only computes the table.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from rich.markup import escape

from induction.io import atomic_path


def report_figure(df: pd.DataFrame, title: str = ""):
    """Bar chart of the drop per task against the random controls' mean ± std."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_bar(
        name="top heads ablated",
        x=df.task,
        y=df["drop"],
        error_y=dict(type="data", array=df.drop_se.fillna(0)),
    )
    fig.add_bar(
        name="random controls (mean ± std)",
        x=df.task,
        y=df.ctrl_mean,
        error_y=dict(type="data", array=df.ctrl_std.fillna(0)),
    )
    fig.update_layout(
        barmode="group", title=title, yaxis_title="drop (positive = worse)", template="plotly_white"
    )
    return fig


def save_report_figure(fig, path: str | Path) -> Path:
    """Write a figure as self-contained HTML (plotly.js embedded), atomically."""
    with atomic_path(path) as tmp:
        fig.write_html(str(tmp), include_plotlyjs=True, full_html=True)
    return Path(path)


def plot_report(df: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """:func:`report_figure` written to ``path``."""
    return save_report_figure(report_figure(df, title), path)


def print_table(df: pd.DataFrame, title: str = "", console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, title_justify="left")
    for col, just in [
        ("task", "left"),
        ("metric", "left"),
        ("n", "right"),
        ("clean", "right"),
        ("ablated", "right"),
        ("drop", "right"),
        ("controls", "right"),
        ("z", "right"),
        ("p_ctrl", "right"),
        ("shaped", "right"),
        ("p_shaped", "right"),
    ]:
        table.add_column(col, justify=just)
    for r in df.itertuples():
        ctrl = (
            "-"
            if math.isnan(r.ctrl_mean)
            else (
                f"{r.ctrl_mean:+.3f} ± {r.ctrl_std:.3f}"
                if not math.isnan(r.ctrl_std)
                else f"{r.ctrl_mean:+.3f}"
            )
        )
        z = "-" if math.isnan(r.z) else f"{r.z:+.1f}"
        style = "bold" if str(r.task).startswith("MEAN") else None
        control = bool(getattr(r, "positive_control", False))
        shaped_mean = getattr(r, "shaped_mean", math.nan)
        shaped = "-" if _missing(shaped_mean) else f"{shaped_mean:+.3f}"
        p_shaped = getattr(r, "p_shaped", math.nan)
        table.add_row(
            escape(f"{r.task} †" if control else str(r.task)),
            r.metric,
            str(r.n),
            f"{r.clean:.3f}",
            f"{r.ablated:.3f}",
            f"{r.drop:+.3f}" + ("" if math.isnan(r.seed_std) else f" ± {r.seed_std:.3f}"),
            ctrl,
            z,
            "-" if math.isnan(r.p_ctrl) else f"{r.p_ctrl:.2f}",
            shaped,
            "-" if _missing(p_shaped) else f"{p_shaped:.2f}",
            style=style,
        )
    if "positive_control" in df.columns and df.positive_control.astype(bool).any():
        table.caption = "† positive control (induction by construction): not in the means"
    console.print(table)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def stdout_console():
    """A console on stdout, 120 columns wide when not a terminal (logs, pipes)."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=120)
