"""The ablation report's figure (ablation.render.report_figure): positive controls marked,
the MEAN rows set apart, each readout on its own axis."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Console

from ablation.render import (
    CONTROL_COLOR,
    DAGGER,
    MEAN_COLOR,
    TASK_COLOR,
    print_table,
    report_figure,
)
from induction.figures.plots import save_figure


def _row(task, metric, drop, control=False, group="g"):
    return {
        "task": task,
        "group": group,
        "metric": metric,
        "n": 16,
        "clean": 0.8,
        "ablated": 0.8 - drop,
        "drop": drop,
        "drop_se": 0.05,
        "seed_std": math.nan,
        "ctrl_mean": 0.1,
        "ctrl_std": 0.02,
        "z": 2.0,
        "p_ctrl": 0.1,
        "positive_control": control,
    }


def report() -> pd.DataFrame:
    rows = []
    for task, control in (("open_fact", False), ("lookup", True), ("math_add", False)):
        rows.append(_row(task, "f1", 0.3, control))
        rows.append(_row(f"{task}:logprob", "logprob", 1.5, control))
    rows += [_row("MEAN:g", "f1", 0.2), _row("MEAN", "f1", 0.2)]
    rows.append(_row("MEAN[logprob]", "logprob", 1.0))
    return pd.DataFrame(rows)


def test_positive_controls_marked_and_means_set_apart(tmp_path):
    fig = report_figure(report(), "t")
    axis = fig.layout.yaxis
    # the task axis, top to bottom: tasks, then positive controls (dagger), then the means
    assert list(axis.categoryarray) == [
        "open_fact",
        "math_add",
        f"lookup {DAGGER}",
        "<b>MEAN:g</b>",
        "<b>MEAN</b>",
    ]
    assert axis.autorange == "reversed"
    target = [t for t in fig.data if t.type == "bar" and t.name == "top heads ablated"]
    assert len(target) == 2  # the task's metric and the log-prob readout, one panel each
    score = dict(zip(target[0].y, target[0].marker.color))
    assert score[f"lookup {DAGGER}"] == CONTROL_COLOR and score["open_fact"] == TASK_COLOR
    assert score["<b>MEAN</b>"] == MEAN_COLOR and len({TASK_COLOR, CONTROL_COLOR, MEAN_COLOR}) == 3
    logprob = dict(zip(target[1].y, target[1].x))  # readout rows drop their ":logprob"
    assert list(logprob) == ["open_fact", "math_add", f"lookup {DAGGER}", "<b>MEAN</b>"]
    assert logprob["<b>MEAN</b>"] == 1.0 and logprob["open_fact"] == 1.5
    assert "nats" in fig.layout.xaxis2.title.text and target[1].xaxis == "x2"
    # a dotted line above the positive controls and above the means, in each panel
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted({s.y0 for s in lines}) == [1.5, 2.5] and len(lines) == 4
    legend = {t.name for t in fig.data if t.showlegend is not False}
    assert any(DAGGER in n and "positive control" in n for n in legend)
    assert any(n.startswith("MEAN") for n in legend)
    assert save_figure(fig, tmp_path / "r.png") is None and (tmp_path / "r.png").stat().st_size


def test_plain_report_without_readouts_or_control_column():
    df = report()
    df = df[df["metric"] != "logprob"].drop(columns="positive_control")
    fig = report_figure(df)
    assert "xaxis2" not in fig.layout and DAGGER not in "".join(fig.layout.yaxis.categoryarray)
    assert not any(DAGGER in (t.name or "") for t in fig.data)
    df["positive_control"] = math.nan  # read back from a file without the column's values
    assert DAGGER not in "".join(report_figure(df).layout.yaxis.categoryarray)
    console = Console(width=200, record=True)
    print_table(df, console=console)  # the console table reads the flag the same way
    assert DAGGER not in console.export_text()
    df["positive_control"] = [True] + [False] * (len(df) - 1)
    print_table(df, console=console)
    assert f"open_fact {DAGGER}" in console.export_text()


def test_a_piped_table_keeps_task_names_whole_and_labels_the_spread():
    df = report()
    df.loc[0, "task"] = "fact_digit:cand_acc_long_name"
    df.loc[0, "seed_std"] = 0.012
    console = Console(width=120, record=True)  # what stdout_console gives a pipe
    print_table(df, console=console)
    text = console.export_text()
    assert "fact_digit:cand_acc_long_name" in text
    assert "± sd over prompt seeds" in text
