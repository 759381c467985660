"""Power of the two-sided t-test, and the difference it detects (Cohen 1988, "Statistical
Power Analysis for the Behavioral Sciences", ch. 2): the noncentral t from ``scipy.stats.nct``,
solved for the effect by ``scipy.optimize.brentq``. Two samples: the pooled sd and
``n_a + n_b - 2`` degrees of freedom; one sample (:func:`one_sample_power`): the sample's sd
and ``n - 1``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

POWER = 0.8  # the power a detectable difference is quoted at
_MIN_SD = 1e-9  # below this spread (float noise of equal values) a t-test means nothing


def pooled_sd(a: ArrayLike, b: ArrayLike) -> float:
    """The two arms' pooled standard deviation (NaN with fewer than 3 values in all)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    df = len(a) + len(b) - 2
    if df < 1:
        return math.nan
    ss = ((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()
    return float(math.sqrt(ss / df))


def _power(effect: float, se: float, df: int, alpha: float) -> float:
    """Power of a two-sided t-test at ``alpha`` whose statistic has standard error ``se``."""
    from scipy import stats

    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = abs(effect) / se
    upper = float(stats.nct.sf(crit, df, nc))
    if not math.isfinite(upper):  # scipy's nct fails in parts of its far tail: the normal's
        upper = float(stats.norm.sf(crit - nc))
    lower = float(stats.nct.cdf(-crit, df, nc))
    if not math.isfinite(lower):
        # P(T < -crit) <= P(T < 0) = Phi(-nc) exactly (T's sign is that of Z + nc); where
        # scipy fails here the bound is below 1e-12
        lower = float(stats.norm.cdf(-nc))
    return min(1.0, upper + lower)


def _detectable(se: float, df: int, alpha: float, power: float) -> float:
    """The effect :func:`_power` reaches ``power`` at."""
    from scipy import optimize, stats

    top = float(stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df) + 2) * se
    # The normal-theory bracket falls short at few degrees of freedom (one df, two seeds: 79%
    # power there), so widen it until it holds the root (the power tends to 1 as nc grows)
    for _ in range(64):
        if _power(top, se, df, alpha) >= power:
            break
        top *= 2
    # (scipy's annotations include the full_output=True tuple)
    root = optimize.brentq(lambda e: _power(e, se, df, alpha) - power, 0, top)
    return float(root)  # pyright: ignore[reportArgumentType]


def power_for(effect: float, n_a: int, n_b: int, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided two-sample t-test at ``alpha`` to detect ``effect`` with
    ``n_a`` and ``n_b`` seeds of spread ``sd`` (noncentral t, ``n_a + n_b - 2`` df)."""
    df = n_a + n_b - 2
    if df < 1 or not sd > _MIN_SD:
        return math.nan
    return _power(effect, sd * math.sqrt(1 / n_a + 1 / n_b), df, alpha)


def detectable_difference(
    n_a: int, n_b: int, sd: float, alpha: float = 0.05, power: float = POWER
) -> float:
    """The smallest difference the two-sided t-test at ``alpha`` detects with ``power``
    (:func:`power_for` solved for the effect)."""
    df = n_a + n_b - 2
    if df < 1 or not sd > _MIN_SD:
        return math.nan
    return _detectable(sd * math.sqrt(1 / n_a + 1 / n_b), df, alpha, power)


def one_sample_power(effect: float, n: int, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided one-sample t-test at ``alpha`` to detect a mean ``effect`` away
    from the null with ``n`` seeds of spread ``sd`` (``n - 1`` df)."""
    if n < 2 or not sd > _MIN_SD:
        return math.nan
    return _power(effect, sd / math.sqrt(n), n - 1, alpha)


def one_sample_detectable(n: int, sd: float, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest mean shift the one-sample t-test at ``alpha`` detects with ``power``."""
    if n < 2 or not sd > _MIN_SD:
        return math.nan
    return _detectable(sd / math.sqrt(n), n - 1, alpha, power)
