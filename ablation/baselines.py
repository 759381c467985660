"""Auditing a task generator for shortcuts: rules that ignore which entry is asked must score
at chance, and the asked entry's position must be uniform (docs/research.md, "Designing an
experiment that can fail"). The zoo's corpus and every built-in task are tested with these;
use them on your own generators the same way.

- :func:`chance_check`: hits of a rule against per-item chance probabilities, with the
  tolerance ``3 * SE + 0.01`` (``SE = sqrt(sum p_i (1 - p_i)) / N``, the binomial standard
  error of a sum of independent Bernoulli(p_i) hits, plus a small margin).
- :func:`position_uniformity`: the asked entry's rank ``r`` among ``n`` mapped to
  ``(r + U) / n`` (``U`` seeded uniform: uniform on [0, 1] exactly when ``r`` is), binned in
  10, chi-square p-value.
- :func:`mode`: the most frequent value, ties broken by first occurrence (a baseline rule).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Position uniformity is rejected below this chi-square p-value.
UNIFORM_P = 0.001


@dataclass(frozen=True)
class ChanceCheck:
    """A rule's mean hit rate against mean chance; ``ok`` when within ``tolerance``
    (``one_sided``: only doing better than chance counts against it)."""

    rule: str
    observed: float
    chance: float
    tolerance: float
    one_sided: bool

    @property
    def ok(self) -> bool:
        gap = self.observed - self.chance
        return gap <= self.tolerance if self.one_sided else abs(gap) <= self.tolerance

    def __str__(self) -> str:
        return (
            f"{self.rule}: {self.observed:.3f} vs chance {self.chance:.3f} "
            f"(tolerance {self.tolerance:.3f})"
        )


def tolerance(chance: Sequence[float]) -> float:
    """``3 * sqrt(sum p (1 - p)) / N + 0.01`` for per-item chance probabilities ``p``."""
    p = np.asarray(chance, dtype=float)
    return float(3 * np.sqrt(np.sum(p * (1 - p))) / len(p) + 0.01)


def chance_check(
    rule: str, hits: Sequence[float], chance: Sequence[float], one_sided: bool = False
) -> ChanceCheck:
    """Compare a rule's per-item hits (0/1) with the per-item chance of a blind guess."""
    h, c = np.asarray(hits, dtype=float), np.asarray(chance, dtype=float)
    return ChanceCheck(rule, float(h.mean()), float(c.mean()), tolerance(chance), one_sided)


def position_uniformity(ranks: Sequence[int], sizes: Sequence[int], seed: int = 0):
    """``(p-value, bin counts)`` of the chi-square test that ``ranks`` (each in
    ``[0, size)``) are uniform; ranks outside their range raise ``ValueError``."""
    from scipy.stats import chisquare

    r, n = np.asarray(ranks, dtype=float), np.asarray(sizes, dtype=float)
    if not np.all((r >= 0) & (r < n)):
        raise ValueError("every rank must lie in [0, size)")
    u = (r + np.random.default_rng(seed).random(len(r))) / n
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    return float(chisquare(counts).pvalue), counts


def mode(values: Sequence):
    """Most frequent value, ties broken by first occurrence."""
    counts = Counter(values)
    return max(values, key=lambda v: (counts[v], -list(values).index(v)))
