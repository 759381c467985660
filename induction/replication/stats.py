"""Across models: Holm over the per-model permutation p-values, family means and spreads over
model seeds, and the test across seeds of each family against the dense one. Every test is
:mod:`induction.stats` (docs/research.md, "Designing an experiment that can fail"):

- :func:`induction.stats.holm` over the models' ``p_perm`` (each ``(1 + k) / (1 + n)`` against
  its own ``n`` random-head controls);
- :func:`ablation.stats.family_comparison`: Welch's t and the exact permutation test over model
  seeds (:func:`induction.stats.seed_test`), on the drop and on the drop in excess of each
  model's random heads; Holm again over the comparisons of one measure;
- :func:`induction.stats.pooled_rank_p`: one family's seeds together against their random heads
  (exact), Holm over families. With 100 controls a model's own p cannot pass Holm over more
  than 5 models; pooling the seeds' ranks can.

Everything here is a function of the per-model rows, so ``--from-results`` recomputes it
exactly from the saved JSON.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ablation.stats import family_comparison
from induction.stats import holm, min_perm_p, pooled_rank_p

from .config import SOURCE
from .models import drop_claim_families, family_order, source_family

#: Per-model columns summarised per family as mean and sd over seeds.
SPREAD = (
    "clean",
    "drop",
    "excess",
    "ctrl_mean",
    "tvd_clean",
    "tvd_drop",
    "tvd_ctrl",
    "pc_drop",
    "max_induction",
    "top_ancestors",
    "top_layers",
    "src_ancestors",
    "src_from2",
    "src_copied",
    "flops_vs_dense",
    "card_flops_vs_dense",
)
#: Per-model columns summarised by their mean only.
MEAN_ONLY = (
    "formed_step",
    "train_flops",
    "random_ancestors",
    "random_layers",
    "top_above",
    "ci_lo",
    "ci_hi",
    "rel_drop",
    "ctrl_rel",
    "induction_heads",
)
#: Per-model columns that are the same for every seed of a family (the first is taken).
FIRST = (
    "top_n",
    "ancestor_pool",
    "min_ancestors",
    "layer_pool",
    "min_layers",
    "src_top",
    "src_min",
    "src_heads",
    "n_ablated",
    "heads",
    "layers",
)


def _num(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return math.nan
    return v


def mean(values) -> float:
    vals = [_num(v) for v in values]
    vals = [v for v in vals if v == v]
    return float(np.mean(vals)) if vals else math.nan


def sd(values) -> float:
    vals = [_num(v) for v in values]
    vals = [v for v in vals if v == v]
    return float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan


def ratio(a, b) -> float:
    """``a / b``; NaN when ``b`` is zero or missing (a model that solves nothing clean)."""
    a, b = _num(a), _num(b)
    return a / b if b == b and b > 0 else math.nan


def group_names(models: pd.DataFrame) -> list[str]:
    """The suite groups measured (columns ``drop:<group>``), in column order."""
    return [
        c.split(":", 1)[1]
        for c in models.columns
        if c.startswith("drop:") and not c.endswith("_std")
    ]


def controls_of(models: pd.DataFrame, column: str = "ctrl_drops") -> list[list[float]]:
    return [json.loads(s) if isinstance(s, str) else list(s) for s in models[column]]


def add_model_stats(models: pd.DataFrame) -> pd.DataFrame:
    """Columns derived across models: ``flops_vs_dense`` (training FLOPs over the mean of the
    dense family's models in this run; NaN without one), ``p_holm`` (Holm over every model's
    ``p_perm``), ``rel_drop`` and ``ctrl_rel`` (drop over the clean score)."""
    models = models.copy()
    if "source_family" not in models.columns:
        models["source_family"] = [source_family(f) for f in models["family"]]
    dense = dense_family(models)
    base = mean(models.loc[models["family"] == dense, "train_flops"]) if dense else math.nan
    models["flops_vs_dense"] = [
        _num(f) / base if base == base else math.nan for f in models["train_flops"]
    ]
    if "p_perm" in models.columns:
        models["p_holm"] = holm(models["p_perm"].astype(float).tolist())
    models["rel_drop"] = [ratio(d, c) for d, c in zip(models["drop"], models["clean"])]
    models["ctrl_rel"] = [ratio(d, c) for d, c in zip(models["ctrl_mean"], models["clean"])]
    return models


add_flops_ratio = add_model_stats  # the name the first version used


def dense_family(models: pd.DataFrame) -> str | None:
    """The zoo family the others are compared with: the first whose source family is
    dense."""
    for fam in family_order(models["family"]):
        if source_family(fam) == "dense":
            return fam
    return None


def family_summary(models: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """One row per family: mean and sd over model seeds, the random controls pooled over
    every draw, how many seeds beat random heads at Holm-adjusted ``p <= alpha``, the seeds
    together against their random heads (``p_pooled``,
    :func:`~induction.stats.pooled_rank_p`;
    ``p_pooled_holm``: Holm over families), the group means and the source's figures."""
    rows = []
    groups = group_names(models)
    for fam in family_order(models["family"]):
        g = models[models["family"] == fam]
        src = source_family(fam)
        controls = controls_of(g)
        pooled = [d for c in controls for d in c]
        row = {"family": fam, "source_family": src, "seeds": len(g)}
        for col in SPREAD:
            if col in g.columns:
                row[col], row[f"{col}_std"] = mean(g[col]), sd(g[col])
        for col in MEAN_ONLY:
            if col in g.columns:
                row[col] = mean(g[col])
        for col in FIRST:
            if col in g.columns:
                row[col] = g[col].iloc[0]
        for name in groups:
            for kind in ("clean", "drop", "ctrl"):
                col = f"{kind}:{name}"
                row[col] = mean(g[col])
                row[f"{col}_std"] = sd(g[col])
        row["ctrl_pooled"] = mean(pooled)
        row["ctrl_pooled_std"] = sd(pooled)
        row["z_seeds"] = ", ".join(f"{_num(z):+.1f}" if _num(z) == _num(z) else "–" for z in g["z"])
        row["p_seeds"] = ", ".join(f"{_num(p):.3f}" for p in g["p_holm"])
        row["n_significant"] = int(sum(_num(p) <= alpha for p in g["p_holm"]))
        row["p_pooled"] = pooled_rank_p(g["drop"], controls)
        row["source_drop"] = SOURCE["drop"].get(src, math.nan)
        row["source_tvd"] = SOURCE["tvd"].get(src, math.nan)
        rows.append(row)
    out = pd.DataFrame(rows)
    if not out.empty:
        out["p_pooled_holm"] = holm(out["p_pooled"].astype(float).tolist())
    return out


def comparisons(models: pd.DataFrame) -> pd.DataFrame:
    """Every family against the dense family across model seeds
    (:func:`ablation.stats.family_comparison`), on ``drop`` and ``excess``; ``p_holm`` is Holm
    over the comparisons of one measure whose family is a drop claim
    (:func:`.models.drop_claim_families`; NaN for the others, round 4's twin). Empty without a
    dense family or a second family."""
    base = dense_family(models)
    cols = [
        "family",
        "vs",
        "measure",
        "n_a",
        "n_b",
        "diff",
        "t",
        "p_welch",
        "p_perm",
        "n_perm",
        "exact",
        "min_p",
        "p_holm",
        "source_diff",
    ]
    if base is None:
        return pd.DataFrame(columns=cols)
    b = models[models["family"] == base]
    rows = []
    readouts = [("", "drop", "ctrl_drops")]
    for name in ("cand_acc", "logprob"):
        # the verdict's readouts (ablation.gates.VERDICT_ORDER), against both control shapes
        if f"drop_{name}" in models.columns and models[f"drop_{name}"].notna().all():
            readouts += [
                (f"[{name}]", f"drop_{name}", f"ctrl_drops_{name}"),
                (f"[{name}, shaped]", f"drop_{name}", f"shaped_drops_{name}"),
            ]
    for fam in family_order(models["family"]):
        if fam == base:
            continue
        a = models[models["family"] == fam]
        tests = {}
        for tag, drop, ctrl in readouts:
            found = family_comparison(
                a[drop].astype(float).tolist(),
                controls_of(a, ctrl),
                b[drop].astype(float).tolist(),
                controls_of(b, ctrl),
            )
            if tag.endswith(", shaped]"):  # the raw drop is the same as the uniform's
                found = {k: v for k, v in found.items() if k != "drop"}
            tests |= {f"{measure}{tag}": t for measure, t in found.items()}
        src = SOURCE["drop"].get(source_family(fam), math.nan) - SOURCE["drop"]["dense"]
        for measure, t in tests.items():
            rows.append(
                {
                    "family": fam,
                    "vs": base,
                    "measure": measure,
                    "n_a": len(a),
                    "n_b": len(b),
                    "diff": t.diff,
                    "t": t.t,
                    "p_welch": t.p_welch,
                    "p_perm": t.p_perm,
                    "n_perm": t.n_perm,
                    "exact": t.exact,
                    "min_p": min_perm_p(len(a), len(b)),
                    "source_diff": src if measure.startswith("drop") else math.nan,
                }
            )
    out = pd.DataFrame(rows, columns=[c for c in cols if c != "p_holm"])
    out["p_holm"] = math.nan  # outside the declared family (round 4's twin): no Holm p
    claimed = drop_claim_families(models["family"])
    for measure in out["measure"].unique():
        idx = out.index[(out["measure"] == measure) & out["family"].isin(claimed)]
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_perm"].astype(float).tolist())
    return out[cols]
