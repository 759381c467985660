"""One model, measured with the workbench's public pipelines only (the same calls as the CLI):

- scan: :func:`induction.scores.scan.scan` (induction score per head; ``induction scan``);
- lineage: :func:`lineage.trace` on that scan (``induction lineage``), the source's "k of the
  12 strongest heads from m ancestors" (Kapl et al. 2025) and, for the heads the ablation
  removes, how concentrated their ancestry is against random head sets;
- ablation: :func:`ablation.ablate` (``induction ablate``; its prompt budget, head plan and
  random controls), on the measured suite (``zoo4g`` for round 4, docs/replication.md) and on
  the ``zoo`` suite's RegBench task with the same plan (same target and control head sets).

Per-model statistics come from :mod:`induction.stats`: the permutation p-value of the mean drop
against the random controls (``(1 + k) / (1 + n)``, ``p_ctrl`` of the report) and a bootstrap
interval of the mean drop that resamples items within each (task, prompt seed)
(:func:`induction.stats.bootstrap_ci_by_seed`; its statistic, the mean over strata of each
stratum's mean drop, is the report's ``MEAN`` drop when every task has every prompt seed).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .config import Settings
from .models import ModelRef


@dataclass
class Measured:
    row: dict  # one row of the per-model table
    tasks: pd.DataFrame  # the ablation reports (measured suite and RegBench), per task
    scores: pd.DataFrame  # the scan
    sentence: str = ""  # the lineage summary's sentence
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def ancestor_counts(
    primary: dict[tuple[int, int], tuple[int, int]],
    top: Sequence[tuple[int, int]],
    samples: int,
    seed: int = 0,
) -> dict:
    """How concentrated the ancestry of the ``top`` heads is, against random head sets.

    ``primary`` maps every head ``(layer, head)`` of the final model to its primary ancestor
    ``(layer, head)``. Returned: distinct ancestor heads (``top_ancestors``) and ancestor
    layers (``top_layers``) of the top heads, the pool sizes, the fewest possible
    (``ceil(n / most descendants of one ancestor)``) and the mean for ``n`` heads drawn at
    random without replacement (``samples`` Monte Carlo draws, seeded).
    """
    heads = sorted(primary)
    n = len(top)
    out: dict = {"top_n": n}
    for key, of in (("ancestors", lambda a: a), ("layers", lambda a: a[0])):
        labels = sorted({of(a) for a in primary.values()})
        index = {a: i for i, a in enumerate(labels)}
        anc = np.array([index[of(primary[h])] for h in heads])
        per = np.bincount(anc, minlength=len(labels))
        rng = np.random.default_rng(seed)
        draws = [len(set(anc[rng.choice(len(heads), n, replace=False)])) for _ in range(samples)]
        pool = "ancestor_pool" if key == "ancestors" else "layer_pool"
        out[f"top_{key}"] = len({of(primary[h]) for h in top})
        out[pool] = len(labels)
        out[f"min_{key}"] = math.ceil(n / int(per.max()))
        out[f"random_{key}"] = float(np.mean(draws)) if draws else float("nan")
    return out


def source_headline(primary: dict, ranked: Sequence[tuple[int, int]], top: int, cover: float):
    """The source's form, "k of the ``top`` strongest heads descend from m ancestors": ``k =
    ceil(cover x top)`` (10 of 12 at the default 0.8, as :func:`lineage.trace`), ``m`` the
    fewest ancestors holding ``k`` of them, and how many the 2 most prolific ancestors hold
    (the source: 10 of 12 from 2); ``src_min``: the fewest the architecture allows,
    ``ceil(k / most descendants of one ancestor)``; ``src_copied``: how many of the ``top``
    descend from an ancestor with more than one descendant. Growth can only concentrate a
    lineage through copied ancestors: heads that formed in layers growth never copies have one
    descendant each, whenever they formed."""
    heads = list(ranked[:top])
    counts = sorted(Counter(primary[h] for h in heads).values(), reverse=True)
    k = math.ceil(cover * len(heads))
    held, m = 0, 0
    for c in counts:
        if held >= k:
            break
        held, m = held + c, m + 1
    per_ancestor = Counter(primary.values())
    most = max(max(per_ancestor.values(), default=1), 1)
    return {
        "src_top": len(heads),
        "src_heads": k,
        "src_ancestors": m,
        "src_from2": int(sum(counts[:2])),
        "src_min": math.ceil(k / most),
        "src_copied": int(sum(per_ancestor[primary[h]] > 1 for h in heads)),
    }


def _ranked(scores: pd.DataFrame) -> list[tuple[int, int]]:
    order = scores.sort_values(["induction", "layer", "head"], ascending=[False, True, True])
    return [(int(la), int(h)) for la, h in zip(order["layer"], order["head"], strict=True)]


def lineage_counts(loaded, scores: pd.DataFrame, top_n: int, settings: Settings):
    """Ancestry of the top heads through :func:`lineage.trace`; a dense model (no duplication
    log, no loop plan) is its own lineage: every head is its own ancestor."""
    info = loaded.info
    ranked = _ranked(scores)
    if loaded.duplication_log_path is None and loaded.loop_plan is None:
        heads = [(la, h) for la in range(info.n_layers) for h in range(info.n_heads)]
        primary = {h: h for h in heads}
        layers = sorted({la for la, _ in ranked[:top_n]})
        sentence = (
            f"dense: the top {top_n} heads are their own ancestors, in {len(layers)} of "
            f"{info.n_layers} layers ({', '.join(f'L{la}' for la in layers)})"
        )
    else:
        import lineage

        result = lineage.trace(loaded, scores=scores, top=settings.source_top)
        anc = result.ancestry[result.ancestry["primary"]]
        primary = {
            (int(r.layer), int(r.head)): (int(r.ancestor_layer), int(r.ancestor_head))
            for r in anc.itertuples()
        }
        s = result.summary
        detail = getattr(s, "detail", "")
        sentence = s.sentence + (f" {detail}" if detail else "")
    counts = ancestor_counts(primary, ranked[:top_n], settings.null_samples)
    counts.update(source_headline(primary, ranked, settings.source_top, 0.8))
    return counts, sentence


def measured_items(run) -> tuple[list[list[float]], list[list[float]]]:
    """Per-item clean and ablated scores of the tasks in the report's ``MEAN`` (generation
    tasks that are not positive controls), one list per (task, prompt seed)."""
    from ablation.report import task_key
    from ablation.tasks.base import DistTask

    clean, ablated = [], []
    for task in run.tasks:
        if getattr(task, "positive_control", False):
            continue
        if not getattr(task, "in_mean", not isinstance(task, DistTask)):
            continue
        res = run.results[task_key(task)]
        clean.append(list(res.clean.items[task.metric]))
        ablated.append(list(res.ablated.items[task.metric]))
    return clean, ablated


def group_rows(report: pd.DataFrame, mean: pd.Series) -> dict[str, pd.Series]:
    """The report's ``MEAN:<group>`` rows by group; with a single measured group the report
    has none and the ``MEAN`` row is that group's mean."""
    rows = {
        str(r["task"]).split(":", 1)[1]: r
        for _, r in report.iterrows()
        if str(r["task"]).startswith("MEAN:")
    }
    if rows:
        return rows
    measured = report[
        ~report["positive_control"].astype(bool) & ~report["task"].str.startswith("MEAN")
    ]
    groups = list(dict.fromkeys(measured["group"]))
    return {groups[0]: mean} if len(groups) == 1 else {}


def _ablation_config(
    settings: Settings, loaded, suite: str, tasks, frac: float | None = None,
    controls: int | None = None,
):  # fmt: skip
    from ablation import AblationConfig

    seeds = list(settings.prompt_seeds)
    if seeds != list(range(seeds[0], seeds[0] + len(seeds))):
        raise ValueError(f"prompt seeds must be consecutive, got {seeds}")
    return AblationConfig(
        frac=settings.frac if frac is None else frac,
        suite=suite,
        tasks=tasks,
        mode=settings.mode,
        controls=settings.controls if controls is None else controls,
        controls_shape=settings.controls_shape,
        readouts=settings.readouts,
        tied=settings.tied and loaded.loop_plan is not None,
        n_items=settings.n_items,
        seed=seeds[0],
        prompt_seeds=len(seeds),
        batch=settings.batch_size,
        cache=settings.cache,
    )


def _row_of(report: pd.DataFrame, task: str) -> pd.Series | None:
    hit = report[report["task"] == task]
    return hit.iloc[0] if len(hit) else None


def _the_row(report: pd.DataFrame, task: str) -> pd.Series:
    """The ``task`` row that every ablation report holds (``MEAN``, ``regbench``)."""
    row = _row_of(report, task)
    if row is None:
        raise RuntimeError(f"the ablation report has no {task} row")
    return row


def _readout_columns(report: pd.DataFrame, suffix: str, with_items: bool = False) -> dict:
    """The mean rows of ``report`` (the task metric and each readout) as row columns:
    ``drop``/``ctrl``/``p``/``shaped``/``p_shaped`` + ``_<readout>`` + ``suffix`` (``@0.05``
    for a further fraction; the main fraction's task-metric columns are the row's own)."""
    out = {}
    for key, name in (("MEAN", "f1"), ("MEAN[cand_acc]", "cand_acc"), ("MEAN[logprob]", "logprob")):
        r = _row_of(report, key)
        if r is None or (name == "f1" and not suffix):
            continue
        tag = f"_{name}{suffix}"
        out.update({
            f"clean{tag}": float(r["clean"]),
            f"drop{tag}": float(r["drop"]),
            f"ctrl{tag}": float(r["ctrl_mean"]),
            f"p{tag}": float(r["p_ctrl"]),
            f"shaped{tag}": float(r["shaped_mean"]),
            f"p_shaped{tag}": float(r["p_shaped"]),
        })  # fmt: skip
        if with_items:
            out[f"ctrl_drops{tag}"] = r["ctrl_drops"]
            out[f"shaped_drops{tag}"] = r["shaped_drops"]
    return out


def _gate_columns(result) -> dict:
    """The ablation's own gates (ablation.gates) as row columns, per readout."""
    from ablation.gates import suite_gate

    out = {}
    if result.gates is None or result.gates.empty:
        return out
    for readout in (None, "cand_acc", "logprob"):
        if readout is not None and readout not in set(result.gates.readout):
            continue
        g = suite_gate(result.gates, readout)
        tag = "task_metric" if readout is None else readout
        out[f"gate_above_{tag}"] = int(g["above_chance"])
        out[f"gate_chance_{tag}"] = float(g.get("chance", math.nan))
        out[f"gate_saturated_{tag}"] = bool(g.get("saturated", False))
        out[f"gate_pass_{tag}"] = bool(g["passed"])
    return out


def scan_model(ref: ModelRef, settings: Settings):
    """Load ``ref`` on the CPU and score its heads (``induction scan``): ``(loaded, scores)``."""
    from induction import load_model
    from induction.scores.scan import scan

    loaded = load_model(ref.spec, device="cpu")
    scores = scan(
        loaded,
        scores=["induction"],
        seeds=settings.scan_seeds,
        batch=settings.scan_batch,
        progress=False,
    ).to_frame()
    return loaded, scores


def measure(ref: ModelRef, settings: Settings, progress: bool = False) -> Measured:
    """Scan, trace and ablate one model; its table row and per-task reports."""
    start = time.perf_counter()
    loaded, scores = scan_model(ref, settings)
    return measure_scanned(ref, loaded, scores, settings, progress, start)


def measure_scanned(
    ref: ModelRef,
    loaded,
    scores: pd.DataFrame,
    settings: Settings,
    progress: bool = False,
    start: float | None = None,
) -> Measured:
    """:func:`measure` after the scan: trace and ablate ``loaded`` ranked by ``scores``."""
    from ablation import ablate
    from ablation.stats import excess_drop
    from induction import INDUCTION_THRESHOLD
    from induction.stats import bootstrap_ci_by_seed

    start = time.perf_counter() if start is None else start
    info, card = loaded.info, loaded.card or {}
    result = ablate(
        loaded,
        _ablation_config(settings, loaded, settings.suite, settings.tasks),
        scores=scores,
        progress=progress,
    )
    plan, report = result.plan, result.to_frame()
    n_abl = len(plan.target)
    counts, sentence = lineage_counts(loaded, scores, settings.top_n or n_abl, settings)

    mean = _the_row(report, "MEAN")
    ctrl = json.loads(mean["ctrl_drops"])
    clean_items, abl_items = measured_items(result.run)
    lo, hi = bootstrap_ci_by_seed(clean_items, abl_items, n_boot=settings.n_boot, seed=0)
    config = card.get("config") or {}
    row = {
        "model": ref.name,
        "family": ref.family,
        "source_family": ref.source_family,
        "seed": ref.seed,
        "layers": int(info.n_layers),
        "heads": int(info.n_layers) * int(info.n_heads),
        "d_model": int(info.d_model),
        "vocab": int(info.vocab_size),
        "formed_step": card.get("formed_at_step"),
        "train_steps": card.get("steps"),
        "train_tokens": card.get("tokens"),
        "train_seconds": card.get("train_seconds"),
        "train_flops": card.get("train_flops"),
        "card_flops_vs_dense": card.get("flops_vs_dense"),
        "growth_steps": json.dumps(card.get("growth_steps") or config.get("grow_at") or []),
        "max_induction": float(scores["induction"].max()),
        "induction_heads": int((scores["induction"] >= INDUCTION_THRESHOLD).sum()),
        **counts,
        "top_above": int(
            (scores["induction"].nlargest(counts["top_n"]) >= INDUCTION_THRESHOLD).sum()
        ),
        "n_ablated": n_abl,
        "n_hooked": len(plan.expand(plan.target)),
        "ablated_heads": ",".join(f"{la}.{h}" for la, h in plan.target),
        "tasks_in_mean": int(mean["n"]),
        "clean": float(mean["clean"]),
        "ablated": float(mean["ablated"]),
        "drop": float(mean["drop"]),
        "ci_lo": lo,
        "ci_hi": hi,
        "ctrl_mean": float(mean["ctrl_mean"]),
        "ctrl_std": float(mean["ctrl_std"]),
        "z": float(mean["z"]),
        "p_perm": float(mean["p_ctrl"]),
        "excess": excess_drop(float(mean["drop"]), ctrl),
        "ctrl_drops": mean["ctrl_drops"],
    }
    for name, g in group_rows(report, mean).items():
        row[f"clean:{name}"] = float(g["clean"])
        row[f"drop:{name}"] = float(g["drop"])
        row[f"ctrl:{name}"] = float(g["ctrl_mean"])
    row.update(_readout_columns(report, "", with_items=True))
    row.update(_gate_columns(result))
    for frac in settings.extra_fracs:
        extra = ablate(
            loaded,
            _ablation_config(
                settings, loaded, settings.suite, settings.tasks, frac, settings.extra_controls
            ),  # fmt: skip
            scores=scores,
            progress=progress,
        ).to_frame()
        row.update(_readout_columns(extra, f"@{frac:g}"))
    pos = report[report["positive_control"].astype(bool)]
    row["pc_clean"] = float(pos["clean"].mean()) if len(pos) else math.nan
    row["pc_drop"] = float(pos["drop"].mean()) if len(pos) else math.nan
    row["pc_ctrl"] = float(pos["ctrl_mean"].mean()) if len(pos) else math.nan
    reports = [report]
    if settings.regbench:
        reg = ablate(
            loaded,
            _ablation_config(settings, loaded, "zoo", ("regbench",)),
            scores=scores,
            progress=progress,
        )
        assert reg.plan.target == plan.target and reg.plan.controls == plan.controls
        rb = reg.to_frame()
        tvd, acc = _the_row(rb, "regbench"), _row_of(rb, "regbench:acc")
        row.update(
            tvd_clean=float(tvd["clean"]),
            tvd_drop=float(tvd["drop"]),
            tvd_ctrl=float(tvd["ctrl_mean"]),
            tvd_p=float(tvd["p_ctrl"]),
            regacc_clean=float(acc["clean"]) if acc is not None else math.nan,
        )
        reports.append(rb.assign(suite="zoo"))
    reports[0] = reports[0].assign(suite=result.suite)
    tasks = pd.concat(reports, ignore_index=True)
    tasks.insert(0, "model", ref.name)
    tasks.insert(1, "family", ref.family)
    tasks.insert(2, "seed", ref.seed)
    return Measured(
        row=row,
        tasks=tasks,
        scores=scores,
        sentence=sentence,
        seconds=time.perf_counter() - start,
    )
