"""Statistics for ablation results: control p-values, multiple testing, confidence intervals
over items, and tests across model seeds.

- :func:`permutation_p`: the empirical p-value of a target drop against ``n`` random-head
  control drops, ``(1 + #{control >= drop}) / (1 + n)`` (Phipson & Smyth 2010, "Permutation
  p-values should never be zero"). It can never be below ``1 / (1 + n)``: ``n >= 20`` controls
  are needed for ``p < 0.05`` (:data:`DEFAULT_CONTROLS`), ``n >= 100`` for a table of models
  corrected for multiple tests (:data:`REPLICATION_CONTROLS`).
- :func:`holm`: Holm (1979) step-down adjusted p-values across models or families.
- :func:`bootstrap_ci` / :func:`bootstrap_ci_by_seed`: percentile bootstrap (Efron &
  Tibshirani 1993) of the mean per-item drop, resampling items (within each prompt seed for
  the second).
- :func:`seed_test`: two families compared across model seeds by Welch's t-test
  (``scipy.stats.ttest_ind(equal_var=False)``) and an exact permutation test of the
  difference in means (every relabelling of the seeds when there are few, else a seeded
  Monte Carlo sample); :func:`family_comparison` runs it on the drop and on the drop in
  excess of the random-head controls.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from induction.errors import InputError

DEFAULT_CONTROLS = 20  # smallest n with 1 / (1 + n) < 0.05
REPLICATION_CONTROLS = 100  # room for a Holm correction over a table of models
MAX_EXACT_RELABELINGS = 100_000  # seed_test enumerates every relabelling up to this many


def permutation_p(drop: float, control_drops: Sequence[float]) -> float:
    """``(1 + #{control >= drop}) / (1 + n)``: one-sided empirical p-value of a target drop
    against ``n`` control drops (NaN without controls)."""
    ctrl = list(control_drops)
    if not ctrl:
        return math.nan
    return (sum(c >= drop for c in ctrl) + 1) / (len(ctrl) + 1)


p_ctrl = permutation_p  # the name ablation.report has always used


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    Sorted ascending ``p_(1) <= ... <= p_(m)``, ``adj_(i) = max_{j <= i} min(1, (m - j + 1)
    p_(j))``: monotone in ``p`` and capped at 1. Rejecting ``adj <= alpha`` controls the
    family-wise error rate at ``alpha``. NaN entries stay NaN and do not count in ``m``.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = len(idx)
    running = 0.0
    for rank, i in enumerate(idx[np.argsort(p[idx], kind="mergesort")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


def _diffs(clean, ablated, higher_is_better: bool) -> np.ndarray:
    c = np.asarray(clean, dtype=float)
    a = np.asarray(ablated, dtype=float)
    if c.shape != a.shape or c.ndim != 1:
        raise InputError(
            f"per-item clean and ablated scores must be 1-D and paired; got shapes {c.shape} "
            f"and {a.shape}"
        )
    return c - a if higher_is_better else a - c


def _check(n_boot: int, alpha: float) -> None:
    if n_boot < 1:
        raise InputError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")


def bootstrap_ci(
    per_item_clean: Sequence[float],
    per_item_ablated: Sequence[float],
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    higher_is_better: bool = True,
) -> tuple[float, float]:
    """Percentile bootstrap ``(lo, hi)`` of the mean per-item drop at level ``1 - alpha``.

    Items are resampled with replacement (the clean and ablated score of an item together);
    the drop is ``clean - ablated`` (``ablated - clean`` when lower is better, e.g. TVD).
    Seeded by ``numpy.random.default_rng(seed)``.
    """
    _check(n_boot, alpha)
    d = _diffs(per_item_clean, per_item_ablated, higher_is_better)
    if len(d) == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = d[rng.integers(len(d), size=(n_boot, len(d)))].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_ci_by_seed(
    per_item_clean: Sequence[Sequence[float]],
    per_item_ablated: Sequence[Sequence[float]],
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    higher_is_better: bool = True,
) -> tuple[float, float]:
    """Like :func:`bootstrap_ci` for a run with several prompt seeds: one list of per-item
    scores per seed; items are resampled within each seed and the statistic is the mean over
    seeds of each seed's mean drop (the ``drop`` a multi-seed report shows)."""
    _check(n_boot, alpha)
    if len(per_item_clean) != len(per_item_ablated):
        raise InputError("clean and ablated scores must have the same prompt seeds")
    diffs = [_diffs(c, a, higher_is_better) for c, a in zip(per_item_clean, per_item_ablated)]
    diffs = [d for d in diffs if len(d)]
    if not diffs:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = np.zeros(n_boot)
    for d in diffs:
        means += d[rng.integers(len(d), size=(n_boot, len(d)))].mean(axis=1)
    means /= len(diffs)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


@dataclass(frozen=True)
class SeedTest:
    """Two families compared over model seeds: ``diff`` = mean(a) - mean(b); Welch's ``t``
    and two-sided ``p_welch``; the two-sided permutation ``p_perm`` of ``|diff|`` over
    ``n_perm`` relabellings (``exact`` when every one was enumerated)."""

    diff: float
    t: float
    p_welch: float
    p_perm: float
    n_perm: int
    exact: bool


def seed_test(
    a_values: Sequence[float],
    b_values: Sequence[float],
    n_resamples: int = 20_000,
    seed: int = 0,
    max_exact: int = MAX_EXACT_RELABELINGS,
) -> SeedTest:
    """Compare family ``a`` with family ``b``, one value per model seed.

    Welch's t from ``scipy.stats.ttest_ind(a, b, equal_var=False)`` (NaN with fewer than two
    values in a family). Permutation p: the share of relabellings of the pooled values into
    groups of the original sizes whose ``|mean(a) - mean(b)|`` is at least the observed one
    (a 1e-12 relative slack absorbs float ties); every relabelling when there are at most
    ``max_exact`` (the observed one included, so ``p >= 1 / C(n_a + n_b, n_a)``), else
    ``n_resamples`` seeded random ones counted as ``(1 + hits) / (1 + n)``.
    """
    from scipy import stats

    a = np.asarray(a_values, dtype=float)
    b = np.asarray(b_values, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise InputError("seed_test needs at least one value per family")
    diff = float(a.mean() - b.mean())
    if len(a) >= 2 and len(b) >= 2:
        res = stats.ttest_ind(a, b, equal_var=False)
        # scipy builds TtestResult's fields at run time (_make_tuple_bunch): no stub sees them
        t = float(res.statistic)  # pyright: ignore[reportAttributeAccessIssue]
        p_welch = float(res.pvalue)  # pyright: ignore[reportAttributeAccessIssue]
    else:
        t, p_welch = math.nan, math.nan
    pooled = np.concatenate([a, b])
    n, k = len(pooled), len(a)
    total = pooled.sum()
    threshold = abs(diff) * (1 - 1e-12) - 1e-15

    def stat(idx) -> float:
        s = pooled[list(idx)].sum()
        return abs(s / k - (total - s) / (n - k))

    n_all = math.comb(n, k)
    if n_all <= max_exact:
        hits = sum(stat(idx) >= threshold for idx in itertools.combinations(range(n), k))
        return SeedTest(diff, t, p_welch, hits / n_all, n_all, True)
    rng = np.random.default_rng(seed)
    hits = sum(stat(rng.permutation(n)[:k]) >= threshold for _ in range(n_resamples))
    return SeedTest(diff, t, p_welch, (1 + hits) / (1 + n_resamples), n_resamples, False)


def excess_drop(drop: float, control_drops: Sequence[float]) -> float:
    """The drop in excess of random heads: ``drop - mean(control drops)`` (NaN without
    controls)."""
    ctrl = list(control_drops)
    return drop - float(np.mean(ctrl)) if ctrl else math.nan


def family_comparison(
    a_drops: Sequence[float],
    a_control_drops: Sequence[Sequence[float]],
    b_drops: Sequence[float],
    b_control_drops: Sequence[Sequence[float]],
    **kw,
) -> dict[str, SeedTest]:
    """:func:`seed_test` of family ``a`` against ``b`` (one entry per model seed) on the
    ``drop`` and on the ``excess`` drop over each model's own random-head controls."""
    if len(a_drops) != len(a_control_drops) or len(b_drops) != len(b_control_drops):
        raise InputError("each model seed needs its drop and its list of control drops")
    a_ex = [excess_drop(d, c) for d, c in zip(a_drops, a_control_drops)]
    b_ex = [excess_drop(d, c) for d, c in zip(b_drops, b_control_drops)]
    return {"drop": seed_test(a_drops, b_drops, **kw), "excess": seed_test(a_ex, b_ex, **kw)}
