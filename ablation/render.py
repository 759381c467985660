"""Rendering of ablation reports: the rich table on a console and the plotly bar chart.

Kept apart from :mod:`ablation.report`, which only computes the table.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from rich.markup import escape

from induction.errors import InputError

if TYPE_CHECKING:
    from rich.console import JustifyMethod

#: Bar colours of the target (top heads) drop by kind of row, and of the random controls.
TASK_COLOR = "#636efa"
CONTROL_COLOR = "#ab63fa"  # positive controls (induction by construction)
MEAN_COLOR = "#1f2a6b"  # MEAN rows
RANDOM_COLOR = "#b4b4b4"
DAGGER = "†"
#: The panels and their axis titles: the task's own metric, then each readout
#: (:mod:`ablation.readout`) on its own axis, since their units differ.
PANELS = {
    "score": "drop in the task's metric (F1, EM, ...)",
    "logprob": "drop in the gold answer's log-prob (nats)",
    "cand_acc": "drop in the accuracy over candidates",
}


def _row_kind(task: str, control: bool) -> str:
    if task.startswith("MEAN"):
        return "mean"
    return "control" if control else "task"


def _panel_and_label(task: str, metric: str) -> tuple[str, str]:
    """A row's panel (``score`` or a readout) and its label there (the task without the
    readout suffix: ``copy:logprob`` is ``copy`` in the log-prob panel)."""
    for readout in PANELS:
        if readout == "score":
            continue
        if task.endswith(f":{readout}") and metric == readout:
            return readout, task[: -len(readout) - 1]
        if task == f"MEAN[{readout}]":
            return readout, "MEAN"
    return "score", task


def report_figure(df: pd.DataFrame, title: str = ""):
    """Horizontal bars of the drop per task (one row per task, the top heads' drop beside the
    random controls' mean ± std), a panel per readout (their units differ). Positive controls
    (induction by construction, not in the means) are marked with a dagger and their own
    colour, below the tasks; the MEAN rows come last, in bold and their own colour, set apart
    by a dotted line."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = []
    for r in df.itertuples(index=False):
        control = _is_control(getattr(r, "positive_control", False))
        panel, label = _panel_and_label(str(r.task), str(r.metric))
        kind = _row_kind(str(r.task), control)
        if kind == "control":
            label = f"{label} {DAGGER}"
        elif kind == "mean":
            label = f"<b>{label}</b>"
        rows.append((panel, label, kind, r))
    order = {"task": 0, "control": 1, "mean": 2}
    labels: list[str] = []  # the task axis, top to bottom: tasks, positive controls, means
    kinds: dict[str, str] = {}
    for _, label, kind, _ in sorted(rows, key=lambda x: order[x[2]]):
        if label not in kinds:
            labels.append(label)
            kinds[label] = kind
    panels = [p for p in PANELS if any(row[0] == p for row in rows)] or ["score"]
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.03)
    colors = {"task": TASK_COLOR, "control": CONTROL_COLOR, "mean": MEAN_COLOR}
    for col, panel in enumerate(panels, start=1):
        mine = sorted((row for row in rows if row[0] == panel), key=lambda x: order[x[2]])
        y = [label for _, label, _, _ in mine]
        fig.add_bar(
            name="top heads ablated",
            showlegend=col == 1,
            orientation="h",
            y=y,
            x=[r.drop for *_, r in mine],
            marker_color=[colors[kind] for _, _, kind, _ in mine],
            error_x=dict(type="data", array=[_zero(r.drop_se) for *_, r in mine]),
            row=1,
            col=col,
        )
        fig.add_bar(
            name="random controls (mean ± std)",
            showlegend=col == 1,
            orientation="h",
            y=y,
            x=[r.ctrl_mean for *_, r in mine],
            marker_color=RANDOM_COLOR,
            error_x=dict(type="data", array=[_zero(r.ctrl_std) for *_, r in mine]),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text=f"{PANELS[panel]}<br>positive = worse", row=1, col=col)
        # the groups set apart: a dotted line above the positive controls and the means
        for k in range(1, len(labels)):
            if kinds[labels[k]] != kinds[labels[k - 1]]:
                fig.add_hline(
                    y=k - 0.5,
                    line_dash="dot",
                    line_color="#777777",
                    line_width=1,
                    row=1,  # pyright: ignore[reportArgumentType]  (plotly types row/col as str)
                    col=col,  # pyright: ignore[reportArgumentType]
                )
    for kind, name in (
        ("control", f"{DAGGER} positive control (induction by construction; not in the means)"),
        ("mean", "MEAN: mean over the tasks"),
    ):
        if kind in kinds.values():  # legend entries for the colours, drawing nothing
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="markers",
                    name=name,
                    marker={"symbol": "square", "size": 12, "color": colors[kind]},
                    hoverinfo="skip",
                ),
                row=1,
                col=1,
            )
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=labels,
        autorange="reversed",
        tickfont={"size": 11},
    )
    fig.update_layout(
        barmode="group",
        title=title,
        template="plotly_white",
        height=max(400, 22 * len(labels) + 230),
        width=max(700, 380 * len(panels) + 260),
        # above the plot: below it the legend would sit among the axis titles
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
        margin={"t": 120},
    )
    return fig


def _zero(value) -> float:
    return 0.0 if _missing(value) else float(value)


def save_report_figure(fig, path: str | Path) -> Path:
    """Write a figure, atomically: self-contained HTML (plotly.js embedded) or a PNG, by the
    suffix (:func:`induction.figures.plots.save_figure`); a PNG that cannot be made is refused in
    one line, never written as HTML under a ``.png`` name."""
    from induction.figures.plots import save_figure

    note = save_figure(fig, Path(path))
    if note:
        raise InputError(note)
    return Path(path)


def plot_report(df: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """:func:`report_figure` written to ``path``."""
    return save_report_figure(report_figure(df, title), path)


def print_table(df: pd.DataFrame, title: str = "", console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, title_justify="left")
    longest = max((len(str(t)) + 2 for t in df.task), default=4)
    columns: list[tuple[str, JustifyMethod]] = [
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
    ]
    for col, just in columns:
        if col == "task":  # a pipe is 120 columns: the task name keeps its width, whole
            table.add_column(col, justify=just, min_width=min(longest, 40), overflow="fold")
        else:
            table.add_column(col, justify=just)
    for r in df.itertuples():
        ctrl = (
            "-"
            if _missing(r.ctrl_mean)
            else (
                f"{r.ctrl_mean:+.3f} ± {r.ctrl_std:.3f}"
                if not _missing(r.ctrl_std)
                else f"{r.ctrl_mean:+.3f}"
            )
        )
        z = "-" if _missing(r.z) else f"{r.z:+.1f}"
        style = "bold" if str(r.task).startswith("MEAN") else None
        control = _is_control(getattr(r, "positive_control", False))
        shaped_mean = getattr(r, "shaped_mean", math.nan)
        shaped = "-" if _missing(shaped_mean) else f"{shaped_mean:+.3f}"
        p_shaped = getattr(r, "p_shaped", math.nan)
        table.add_row(
            escape(f"{r.task} †" if control else str(r.task)),
            str(r.metric),
            str(r.n),
            f"{r.clean:.3f}",
            f"{r.ablated:.3f}",
            f"{r.drop:+.3f}" + ("" if _missing(r.seed_std) else f" ± {r.seed_std:.3f}"),
            ctrl,
            z,
            "-" if _missing(r.p_ctrl) else f"{r.p_ctrl:.2f}",
            shaped,
            "-" if _missing(p_shaped) else f"{p_shaped:.2f}",
            style=style,
        )
    notes = []
    if not df.seed_std.isna().all():
        notes.append("drop ± sd over prompt seeds; controls: mean ± sd over random head sets")
    if "positive_control" in df.columns and any(map(_is_control, df.positive_control)):
        notes.append("† positive control (induction by construction): not in the means")
    table.caption = "\n".join(notes) or None
    console.print(table)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_control(value) -> bool:
    """A row's ``positive_control`` flag; a missing one (NaN read back from a file) is not."""
    return not _missing(value) and bool(value)


def stdout_console():
    """A console on stdout, 120 columns wide when not a terminal (logs, pipes)."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=120)
