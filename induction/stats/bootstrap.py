"""Percentile bootstrap (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13)
of a mean paired difference, resampling items, optionally within strata (prompt seeds).

Written by hand, not ``scipy.stats.bootstrap(method="percentile")``: scipy draws the same
resamples from the same generator (``rng.integers(0, n, (n_resamples, n))`` per sample, in
order; tests/induction/stats/test_bootstrap.py checks it), but it takes its quantiles at
``(1 - confidence_level) / 2``, which for 95% is ``0.025000000000000022`` in floating point,
not ``0.025``: its ends differ from these in the last digits (up to 2e-15 on 200 random inputs,
measured 2026-12-06 with scipy 1.17), so stored intervals would no longer recompute exactly.
It also refuses a sample of one item, which here is a zero-width interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from induction.errors import InputError


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
