"""Power of the two-sided two-sample t-test, and the difference it detects (Cohen 1988,
"Statistical Power Analysis for the Behavioral Sciences", ch. 2): the noncentral t from
``scipy.stats.nct`` with the pooled sd and ``n_a + n_b - 2`` degrees of freedom, solved for the
effect by ``scipy.optimize.brentq``.
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


def power_for(effect: float, n_a: int, n_b: int, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided two-sample t-test at ``alpha`` to detect ``effect`` with
    ``n_a`` and ``n_b`` seeds of spread ``sd`` (noncentral t, ``n_a + n_b - 2`` df)."""
    from scipy import stats

    df = n_a + n_b - 2
    if df < 1 or not sd > _MIN_SD:
        return math.nan
    se = sd * math.sqrt(1 / n_a + 1 / n_b)
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = abs(effect) / se
    if nc > 40:  # beyond scipy's noncentral t, and the power is 1 to 1e-12
        return 1.0
    power = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
    if not math.isfinite(power):  # scipy's nct fails in parts of its far tail: the normal
        power = float(stats.norm.sf(crit - nc) + stats.norm.cdf(-crit - nc))
    return power


def detectable_difference(
    n_a: int, n_b: int, sd: float, alpha: float = 0.05, power: float = POWER
) -> float:
    """The smallest difference the two-sided t-test at ``alpha`` detects with ``power``
    (:func:`power_for` solved for the effect)."""
    from scipy import optimize, stats

    df = n_a + n_b - 2
    if df < 1 or not sd > _MIN_SD:
        return math.nan
    se = sd * math.sqrt(1 / n_a + 1 / n_b)
    top = (stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df) + 2) * se
    # (scipy's annotations include the full_output=True tuple)
    root = optimize.brentq(lambda e: power_for(e, n_a, n_b, sd, alpha) - power, 0, top)
    return float(root)  # pyright: ignore[reportArgumentType]
