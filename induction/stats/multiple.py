"""Multiple testing: Holm's step-down adjustment (Holm 1979, "A simple sequentially rejective
multiple test procedure", Scand. J. Statist. 6:65-70).

Written here because neither numpy nor scipy has it (``scipy.stats.false_discovery_control``
is Benjamini-Hochberg/-Yekutieli, which control the false discovery rate, not the family-wise
error rate) and statsmodels is not a dependency; tests/induction/stats/test_multiple.py checks
it against the formula of ``statsmodels.stats.multitest.multipletests(method="holm")``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


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
