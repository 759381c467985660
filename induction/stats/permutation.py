"""Permutation p-values: a value against control draws, two samples against each other, and
several models' ranks pooled.

- :func:`permutation_p`: ``(1 + #{control >= x}) / (1 + n)``, one value against ``n`` control
  draws (Phipson & Smyth 2010, "Permutation p-values should never be zero"); never below
  ``1 / (1 + n)``. A count, so nothing in scipy to call.
- :func:`seed_test`: two samples (one value per model seed) by Welch's t
  (``scipy.stats.ttest_ind(equal_var=False)``) and the two-sided permutation test of the
  difference in means, whose relabellings come from ``scipy.stats.permutation_test`` (every
  one when there are few, else a seeded sample); :func:`min_perm_p` is its smallest exact p.
- :func:`pooled_rank_p`: several models' ranks against their own controls together, exact by
  convolution (no scipy distribution is a sum of discrete uniforms).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from induction.errors import InputError

MAX_EXACT_RELABELINGS = 100_000  # seed_test enumerates every relabelling up to this many
#: Relative slack for float ties in the two-sample statistic, shared with
#: :mod:`induction.stats.intervals` so an interval's ends are where :func:`seed_test` turns.
TIE_SLACK = 1e-12


def permutation_p(drop: float, control_drops: Sequence[float]) -> float:
    """``(1 + #{control >= drop}) / (1 + n)``: one-sided empirical p-value of a target drop
    against ``n`` control drops (NaN without controls)."""
    ctrl = list(control_drops)
    if not ctrl:
        return math.nan
    return (sum(c >= drop for c in ctrl) + 1) / (len(ctrl) + 1)


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
    (a :data:`TIE_SLACK` relative slack absorbs float ties); every relabelling when there are
    at most ``max_exact`` (the observed one included, so ``p >= 1 / C(n_a + n_b, n_a)``), else
    ``n_resamples`` seeded random ones counted as ``(1 + hits) / (1 + n)`` (at least as many
    as there are relabellings: every one, exact).

    The relabellings and their statistics are ``scipy.stats.permutation_test``'s
    (``permutation_type="independent"``; a seeded sample draws ``default_rng(seed)
    .permutation`` once per relabelling); the hits are counted on its ``null_distribution``
    with the slack above, because scipy's own ``pvalue`` uses a relative tolerance of 100
    machine epsilons (scipy docs, ``permutation_test``). An arm of one value (scipy wants two)
    is relabelled by hand: ``n`` relabellings, every one.
    """
    from scipy import stats

    a = np.asarray(a_values, dtype=float)
    b = np.asarray(b_values, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise InputError("seed_test needs at least one value per family")
    diff = float(a.mean() - b.mean())
    if len(a) >= 2 and len(b) >= 2:
        welch = np.asarray(stats.ttest_ind(a, b, equal_var=False), dtype=float)  # (t, p)
        t, p_welch = float(welch[0]), float(welch[1])
    else:
        t, p_welch = math.nan, math.nan
    pooled = np.concatenate([a, b])
    n, k = len(pooled), len(a)
    total = pooled.sum()
    threshold = abs(diff) * (1 - TIE_SLACK) - 1e-15

    def stat(x: np.ndarray, y: np.ndarray | None = None, axis: int = -1) -> np.ndarray:
        s = x.sum(axis=axis)  # |mean(a) - mean(b)| from the first group's sum
        return np.abs(s / k - (total - s) / (n - k))

    n_all = math.comb(n, k)
    exact = n_all <= max_exact or n_all <= n_resamples
    if min(k, n - k) < 2:  # scipy needs two values per sample; C(n, 1) = n splits
        null = np.array([stat(pooled[list(i)]) for i in itertools.combinations(range(n), k)])
        exact = True
    else:
        null = stats.permutation_test(
            (a, b),
            stat,
            permutation_type="independent",
            vectorized=True,
            n_resamples=n_all if exact else n_resamples,  # n_all: every relabelling
            alternative="greater",
            rng=np.random.default_rng(seed),
        ).null_distribution
    hits = int(np.count_nonzero(null >= threshold))
    if exact:
        return SeedTest(diff, t, p_welch, hits / n_all, n_all, True)
    return SeedTest(diff, t, p_welch, (1 + hits) / (1 + n_resamples), n_resamples, False)


def min_perm_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided exact permutation p of :func:`seed_test` with ``n_a`` and
    ``n_b`` seeds: the observed split (and, with equal sizes, its mirror image) over all
    ``C(n_a + n_b, n_a)`` splits."""
    return (2 if n_a == n_b else 1) / math.comb(n_a + n_b, n_a)


def _finite(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def pooled_rank_p(drops: Iterable, control_drops: Iterable[Iterable]) -> float:
    """Exact one-sided p that a family's top heads cost more than random heads, all seeds
    together.

    Per model ``k``, ``u_k = #{control >= drop_k}`` (0 when the top heads beat every one of
    its ``n_k`` random sets). Under the null that the top set is one more random set, ``u_k``
    is uniform on ``0..n_k`` and independent across models (stochastically larger with ties,
    so the test stays conservative); ``p = P(sum U_k <= sum u_k)``, exact by convolution. One
    model gives its permutation p, ``(1 + u) / (1 + n)``; k models reach down to
    ``prod 1 / (1 + n_k)``. Missing values (NaN, None, text) are left out; NaN when no model
    has controls.
    """
    observed, null = 0, np.ones(1)
    for drop, ctrl in zip(drops, control_drops):
        ctrl = [c for c in (_finite(c) for c in ctrl) if c == c]
        drop = _finite(drop)
        if not ctrl or drop != drop:
            continue
        observed += sum(c >= drop for c in ctrl)
        null = np.convolve(null, np.full(len(ctrl) + 1, 1 / (len(ctrl) + 1)))
    if len(null) == 1:
        return math.nan
    return float(min(1.0, null[: observed + 1].sum()))
