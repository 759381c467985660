"""Per-task report: clean score, ablated score, drop, random-control spread and z-score.

``drop`` is oriented so that positive means the ablation hurt: ``clean - ablated`` for
scores where higher is better (F1, EM, accuracy) and ``ablated - clean`` for TVD. For each
control head set the same drop is computed; ``ctrl_mean``/``ctrl_std`` (sample std, ddof=1)
summarise them and ``z = (drop - ctrl_mean) / ctrl_std`` (NaN with fewer than 2 controls or
zero spread); ``p_ctrl = (k + 1) / (n + 1)`` with ``k`` the controls whose drop is at least
the target's (an empirical p-value that does not assume normal control drops). ``drop_se``
is the paired standard error of the drop over items and ``drop_ci_lo``/``drop_ci_hi`` a 95%
percentile bootstrap interval of it (items resampled within each prompt seed; for the means,
within each task). With several prompt seeds (``--prompt-seeds``) scores are averaged over
seeds and ``seed_std`` is the standard deviation of the drop across seeds.
The ``MEAN`` row averages the generation tasks that are not positive controls (F1/EM/number:
the "mean F1 over tasks" of the source), ``MEAN:<group>`` rows each group; their control
spread is over per-control mean drops. ``shaped_*`` columns are the same statistics against
the layer-shaped controls (the target's heads-per-layer profile, ``selection.shaped_controls``).
With readouts (``ablation.readout``) each generation task also has ``<task>:logprob`` and
``<task>:cand_acc`` rows and the means ``MEAN[logprob]`` and ``MEAN[cand_acc]``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ablation.metrics import get_metric
from ablation.tasks.base import DistTask, Task
from induction.stats import bootstrap_ci_by_seed
from induction.stats import permutation_p as p_ctrl  # the report's name for it, kept
from induction.store.io import write_json, write_table

#: Bootstrap resamples behind ``drop_ci_lo``/``drop_ci_hi`` (seeded, so reports reproduce).
BOOTSTRAP_SAMPLES = 1000

COLUMNS = [
    "task",
    "group",
    "metric",
    "n",
    "seeds",
    "clean",
    "ablated",
    "drop",
    "drop_se",
    "drop_ci_lo",
    "drop_ci_hi",
    "seed_std",
    "ctrl_mean",
    "ctrl_std",
    "z",
    "p_ctrl",
    "ctrl_drops",
    "shaped_mean",
    "shaped_std",
    "p_shaped",
    "shaped_drops",
    "positive_control",
]

#: Continuous readouts reported beside a generation task's metric (:mod:`ablation.readout`);
#: their means are the ``MEAN[<readout>]`` rows.
READOUT_METRICS = ("logprob", "cand_acc")


def _drop(clean: float, other: float, higher_is_better: bool) -> float:
    return clean - other if higher_is_better else other - clean


def _stats(drop: float, ctrl: list[float]) -> tuple[float, float, float]:
    if not ctrl:
        return math.nan, math.nan, math.nan
    mean = float(np.mean(ctrl))
    std = float(np.std(ctrl, ddof=1)) if len(ctrl) > 1 else math.nan
    z = (drop - mean) / std if std and not math.isnan(std) and std > 0 else math.nan
    return mean, std, z


def build_report(run) -> pd.DataFrame:
    """One row per task (and metric), averaged over prompt seeds when the run has several
    (``seed_std`` is then the spread of the drop over seeds); then, over the generation tasks
    that are not positive controls, one ``MEAN:<group>`` row per group (when there are
    several groups) and the ``MEAN`` row."""
    rows = []
    n_controls = len(run.plan.controls)
    by_name: dict[str, list[Task]] = {}
    for task in run.tasks:
        by_name.setdefault(task.name, []).append(task)
    measured: list[dict] = []  # generation tasks that enter the mean (not positive controls)
    readouts: dict[str, list[dict]] = {m: [] for m in READOUT_METRICS}
    for name, group in by_name.items():
        first = group[0]
        metric_list = list(getattr(first, "metrics", None) or [])  # lm-eval: all metrics
        metric_list = metric_list or [(first.metric, first.higher_is_better)]
        if isinstance(first, DistTask):
            metric_list.append(("acc", get_metric("acc").higher_is_better))
        clean0 = run.results[task_key(first)].clean.scores
        metric_list += [(m, True) for m in READOUT_METRICS if m in clean0]
        for metric, hib in metric_list:
            cleans, abls, drops, diffs = [], [], [], []
            items_clean, items_abl = [], []  # per prompt seed, for the bootstrap interval
            ctrl_by_seed, shaped_by_seed = [], []
            for task in group:
                res = run.results[task_key(task)]
                clean = res.clean.scores[metric]
                abl = res.ablated.scores[metric]
                cleans.append(clean)
                abls.append(abl)
                drops.append(_drop(clean, abl, hib))
                ci = np.asarray(res.clean.items[metric], dtype=float)
                ai = np.asarray(res.ablated.items[metric], dtype=float)
                diffs.extend((ci - ai) if hib else (ai - ci))
                keep = np.isfinite(ci) & np.isfinite(ai)
                items_clean.append(ci[keep].tolist())
                items_abl.append(ai[keep].tolist())
                ctrl_by_seed.append([_drop(clean, c.scores[metric], hib) for c in res.controls()])
                shaped_by_seed.append([_drop(clean, c.scores[metric], hib) for c in res.shaped()])
            drop = float(np.mean(drops))
            ctrl = (
                [float(np.mean(c)) for c in zip(*ctrl_by_seed, strict=True)] if n_controls else []
            )
            shaped = [float(np.mean(c)) for c in zip(*shaped_by_seed, strict=True)]
            mean, std, z = _stats(drop, ctrl)
            n = len(diffs)
            finite = int(np.isfinite(diffs).sum()) if n else 0  # lm-eval: NaN if not numbers
            se = float(np.nanstd(diffs, ddof=1) / math.sqrt(n)) if finite > 1 else math.nan
            seed_std = float(np.std(drops, ddof=1)) if len(drops) > 1 else math.nan
            ci_lo, ci_hi = bootstrap_ci_by_seed(
                items_clean, items_abl, n_boot=BOOTSTRAP_SAMPLES, higher_is_better=hib
            )
            rows.append(
                {
                    "task": name if metric == first.metric else f"{name}:{metric}",
                    "group": first.group,
                    "metric": metric,
                    "n": n,
                    "seeds": len(group),
                    "clean": float(np.mean(cleans)),
                    "ablated": float(np.mean(abls)),
                    "drop": drop,
                    "drop_se": se,
                    "drop_ci_lo": ci_lo,
                    "drop_ci_hi": ci_hi,
                    "seed_std": seed_std,
                    "ctrl_mean": mean,
                    "ctrl_std": std,
                    "z": z,
                    "p_ctrl": p_ctrl(drop, ctrl),
                    "ctrl_drops": json.dumps([round(c, 4) for c in ctrl]),
                    **_shaped_stats(drop, shaped),
                }
            )
            rows[-1]["positive_control"] = bool(getattr(first, "positive_control", False))
            in_mean = getattr(first, "in_mean", not isinstance(first, DistTask))
            if in_mean and not rows[-1]["positive_control"]:
                pooled = (
                    [x for xs in items_clean for x in xs],
                    [x for xs in items_abl for x in xs],
                )
                entry = {**rows[-1], "_ctrl": ctrl, "_shaped": shaped, "_items": pooled}
                entry["_hib"] = hib
                if metric == first.metric:
                    measured.append(entry)
                elif metric in readouts:
                    readouts[metric].append(entry)
    groups = list(dict.fromkeys(r["group"] for r in measured))
    if len(groups) > 1:
        for g in groups:
            rows.append(_mean_row(f"MEAN:{g}", g, [r for r in measured if r["group"] == g]))
    if measured:
        rows.append(_mean_row("MEAN", "generation tasks", measured))
    for metric, entries in readouts.items():
        if entries:
            rows.append(_mean_row(f"MEAN[{metric}]", "generation tasks", entries))
    return pd.DataFrame(rows, columns=COLUMNS)


def _shaped_stats(drop: float, shaped: list[float]) -> dict:
    """The ``shaped_*`` columns: mean, sd and permutation p against the shaped controls."""
    mean, std, _ = _stats(drop, shaped)
    return {
        "shaped_mean": mean,
        "shaped_std": std,
        "p_shaped": p_ctrl(drop, shaped),
        "shaped_drops": json.dumps([round(c, 4) for c in shaped]),
    }


def _mean_row(label: str, group: str, measured: list[dict]) -> dict:
    """Mean over task rows of clean, ablated and drop; the controls' spread is over each
    control's mean drop (so ``p_ctrl`` compares like with like)."""
    drop = float(np.mean([r["drop"] for r in measured]))
    per_control = list(zip(*(r["_ctrl"] for r in measured), strict=True))
    ctrl = [float(np.mean(c)) for c in per_control]
    shaped = [float(np.mean(c)) for c in zip(*(r["_shaped"] for r in measured), strict=True)]
    mean, std, z = _stats(drop, ctrl)
    # items resampled within each task; the statistic is the mean over tasks of their drops
    hib = measured[0]["_hib"] if all(r["_hib"] == measured[0]["_hib"] for r in measured) else None
    ci_lo, ci_hi = (
        bootstrap_ci_by_seed(
            [r["_items"][0] for r in measured],
            [r["_items"][1] for r in measured],
            n_boot=BOOTSTRAP_SAMPLES,
            higher_is_better=hib,
        )
        if hib is not None
        else (math.nan, math.nan)
    )
    return {
        "task": label,
        "group": group,
        "metric": "/".join(dict.fromkeys(r["metric"] for r in measured)),
        "n": len(measured),
        "seeds": max(r["seeds"] for r in measured),
        "clean": float(np.mean([r["clean"] for r in measured])),
        "ablated": float(np.mean([r["ablated"] for r in measured])),
        "drop": drop,
        "drop_se": math.nan,
        "drop_ci_lo": ci_lo,
        "drop_ci_hi": ci_hi,
        "seed_std": math.nan,
        "ctrl_mean": mean,
        "ctrl_std": std,
        "z": z,
        "p_ctrl": p_ctrl(drop, ctrl),
        "ctrl_drops": json.dumps([round(c, 4) for c in ctrl]),
        **_shaped_stats(drop, shaped),
        "positive_control": False,
    }


def task_key(task) -> str:
    """Results key of one task instance: name and prompt seed."""
    return f"{task.name}@{getattr(task, 'seed', 0)}"


def overall_drop(df: pd.DataFrame) -> float | None:
    row = df[df.task == "MEAN"]
    return float(row["drop"].iloc[0]) if len(row) else None


def write_report(df: pd.DataFrame, path: str | Path, meta: dict | None = None) -> Path:
    """CSV / Parquet / JSON lines by suffix (atomic); ``.json`` also carries the run's meta."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        rows = json.loads(df.to_json(orient="records"))
        return write_json(path, {"meta": meta or {}, "rows": rows})
    return write_table(df, path)


def tasks_frame(tasks: list[Task]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"task": t.name, "group": t.group, "metric": t.metric, "n": len(t.items)} for t in tasks]
    )
