"""Intervals instead of bare p-values for the drop claims (issue #41, docs/replication.md,
"Verdict words"). The statistics are :mod:`induction.stats`: the shift and ratio intervals of
the inverted permutation test (:mod:`induction.stats.intervals`), the t-test's power and
detectable difference (:mod:`induction.stats.power`); ``alpha / m`` over the ``m`` drop claims
is Holm's first step (Bonferroni), so the adjusted intervals hold simultaneously. Here:

- :func:`word`: *agree* (the interval excludes the null in the source's direction),
  *disagree* (it excludes the source's effect), *inconclusive* (it holds both);
  *untestable here* is decided before, by a gate or the design.
- :func:`read_claim`: all of it for one drop claim, on the difference and the ratio scale;
  :func:`drop_cells`: its cells in the verdict table.
- :func:`read_shift` (two arms) and :func:`read_gap` (one arm against a fixed level): the
  other claims, on a difference scale alone (docs/replication.md, "Amendment: every row from
  an interval"); :func:`difference_cells`: their cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from induction.errors import InputError
from induction.stats import (
    detectable_difference,
    finite_arms,
    mean_interval,
    min_perm_p,
    min_sign_flip_p,
    one_sample_detectable,
    one_sample_power,
    pooled_sd,
    power_for,
    ratio_interval,
    shift_interval,
)


def word(interval: tuple[float, float], null: float, source: float) -> str:
    """The verdict word from an interval: *agree* when it excludes ``null`` on the side of
    ``source`` (the source's effect), *disagree* when it excludes ``source``, *inconclusive*
    when it holds both (*untestable here* without an interval)."""
    lo, hi = interval
    if not (lo == lo and hi == hi):
        return "untestable here"
    if (source > null and lo > null) or (source < null and hi < null):
        return "agree"
    if not lo <= source <= hi:
        return "disagree"
    return "inconclusive"


@dataclass(frozen=True)
class ClaimReading:
    """One drop claim, arm ``b`` against ``a`` (dense), on two scales. ``diff_ci`` and
    ``ratio_ci`` at ``1 - alpha``; ``*_adj`` at ``1 - alpha / m``; ``mdd`` / ``mdd_adj`` the
    difference detectable at 80% power, ``power`` / ``power_adj`` for ``source_diff``;
    ``words``: per scale, on the adjusted intervals."""

    n_a: int
    n_b: int
    m: int
    diff: float
    diff_ci: tuple[float, float]
    diff_ci_adj: tuple[float, float]
    ratio: float
    ratio_ci: tuple[float, float]
    ratio_ci_adj: tuple[float, float]
    sd: float
    mdd: float
    mdd_adj: float
    source_diff: float
    source_ratio: float
    power: float
    power_adj: float
    words: dict[str, str]
    scale: str | None = None  # the declared scale (round 4, R8); None: both must agree (A9)

    @property
    def word(self) -> str:
        """The row's word: the declared scale's word, else the two scales' word where they
        agree, else *inconclusive*."""
        if self.scale is not None:
            return self.words.get(self.scale, "untestable here")
        found = set(self.words.values())
        return found.pop() if len(found) == 1 else "inconclusive"


def read_claim(
    a: ArrayLike,
    b: ArrayLike,
    source_diff: float,
    source_ratio: float,
    m: int = 1,
    alpha: float = 0.05,
    scale: str | None = None,
) -> ClaimReading:
    """Arm ``b``'s drops against arm ``a``'s (one per seed), with the source's effect as a
    difference and as a ratio, Holm's first step over ``m`` claims; ``scale`` (``difference``
    or ``ratio``), where declared, alone gives the word."""
    if m < 1 or not 0 < alpha < 1:
        raise InputError(f"need m >= 1 and 0 < alpha < 1, got m={m}, alpha={alpha}")
    if scale not in (None, "difference", "ratio"):
        raise InputError(f"scale must be 'difference' or 'ratio', got {scale!r}")
    a, b = finite_arms(a, b)
    d = read_shift(a, b, source_diff, m, alpha)  # the difference scale
    r, r_adj = ratio_interval(a, b, (alpha, alpha / m))
    ratio = float(b.mean() / a.mean()) if a.mean() > 0 and b.mean() > 0 else math.nan
    words = {"difference": word(d.ci_adj, 0.0, source_diff)}
    if ratio == ratio:
        words["ratio"] = word(r_adj, 1.0, source_ratio)
    return ClaimReading(
        n_a=len(a),
        n_b=len(b),
        m=m,
        diff=d.diff,
        diff_ci=d.ci,
        diff_ci_adj=d.ci_adj,
        ratio=ratio,
        ratio_ci=r,
        ratio_ci_adj=r_adj,
        sd=d.sd,
        mdd=d.mdd,
        mdd_adj=d.mdd_adj,
        source_diff=source_diff,
        source_ratio=source_ratio,
        power=d.power,
        power_adj=d.power_adj,
        words=words,
        scale=scale,
    )


@dataclass(frozen=True)
class DifferenceReading:
    """A claim read on one difference scale, its null at 0: ``diff`` with its interval at
    ``1 - alpha`` (``ci``) and at ``1 - alpha / m`` (``ci_adj``), the difference detectable
    at 80% power and the power for ``source`` (the source's effect, or the declared effect of
    interest) at both levels, and ``floor``, the smallest p the seeds allow."""

    n: tuple[int, ...]
    diff: float
    ci: tuple[float, float]
    ci_adj: tuple[float, float]
    source: float
    sd: float
    mdd: float
    mdd_adj: float
    power: float
    power_adj: float
    floor: float
    m: int = 1
    alpha: float = 0.05

    @property
    def testable(self) -> bool:
        """The seeds allow a p at or below ``alpha / m`` (the seeds rule, R4 and A5)."""
        return self.floor <= self.alpha / self.m

    @property
    def word(self) -> str:
        """:func:`word` on the adjusted interval, or *untestable here* by the seeds rule."""
        return word(self.ci_adj, 0.0, self.source) if self.testable else "untestable here"


def read_shift(
    a: ArrayLike, b: ArrayLike, source: float, m: int = 1, alpha: float = 0.05
) -> DifferenceReading:
    """``mean(b) - mean(a)`` over seeds, unpaired: the exact permutation test inverted
    (:func:`~induction.stats.shift_interval`) and the two-sample t-test's power."""
    a, b = finite_arms(a, b)
    ci, ci_adj = shift_interval(a, b, (alpha, alpha / m))
    sd = pooled_sd(a, b)
    return DifferenceReading(
        n=(len(a), len(b)),
        diff=float(b.mean() - a.mean()),
        ci=ci,
        ci_adj=ci_adj,
        source=source,
        sd=sd,
        mdd=detectable_difference(len(a), len(b), sd, alpha),
        mdd_adj=detectable_difference(len(a), len(b), sd, alpha / m),
        power=power_for(source, len(a), len(b), sd, alpha),
        power_adj=power_for(source, len(a), len(b), sd, alpha / m),
        floor=min_perm_p(len(a), len(b)),
        m=m,
        alpha=alpha,
    )


def read_gap(gaps: ArrayLike, source: float, m: int = 1, alpha: float = 0.05) -> DifferenceReading:
    """The mean of one value per seed, each a seed's gap to a fixed level (its own chance):
    the one-sample sign-flip test inverted (:func:`~induction.stats.mean_interval`) and the
    one-sample t-test's power."""
    x = np.asarray(gaps, dtype=float)
    ci, ci_adj = mean_interval(x, (alpha, alpha / m))  # checks the values
    sd = float(x.std(ddof=1)) if len(x) > 1 else math.nan
    return DifferenceReading(
        n=(len(x),),
        diff=float(x.mean()),
        ci=ci,
        ci_adj=ci_adj,
        source=source,
        sd=sd,
        mdd=one_sample_detectable(len(x), sd, alpha),
        mdd_adj=one_sample_detectable(len(x), sd, alpha / m),
        power=one_sample_power(source, len(x), sd, alpha),
        power_adj=one_sample_power(source, len(x), sd, alpha / m),
        floor=min_sign_flip_p(len(x)),
        m=m,
        alpha=alpha,
    )


def difference_cells(reading: DifferenceReading, digits: int = 3) -> dict[str, str]:
    """The verdict table's interval cells of a claim read on a difference scale alone (no
    ratio, no random-head excess)."""

    return {
        "difference": f"{reading.diff:+.{digits}f}",
        "interval": f"{fmt_ci(reading.ci, digits=digits)}, adjusted "
        f"{fmt_ci(reading.ci_adj, digits=digits)}",
        "ratio": "–",
        "detectable": f"{_two(reading.mdd)} ({_two(reading.mdd_adj)})",
        "power": f"{_two(reading.power)} ({_two(reading.power_adj)})",
        "excess_uniform": "–",
        "excess_shaped": "–",
    }


def _two(x: float) -> str:
    """Two decimals, or a dash where the seeds give no figure (NaN)."""
    return "–" if x != x else f"{x:.2f}"


def fmt_ci(ci: tuple[float, float], signed: bool = True, digits: int = 3) -> str:
    """``[-0.046, +0.198]``; ``±inf`` ends as such."""

    def one(x: float) -> str:
        if math.isinf(x):
            return "-inf" if x < 0 else "+inf" if signed else "inf"
        return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"

    return f"[{one(ci[0])}, {one(ci[1])}]"


def drop_cells(models, a: list[str], b: list[str], readout: str | None, source_family: str,
               m: int, scale: str | None = None) -> tuple[dict, ClaimReading]:  # fmt: skip
    """The interval cells of a drop claim, arm ``b`` (model names) against ``a`` (dense), on
    ``readout`` (``None``: the task metric, F1/EM) from the per-model rows ``models`` (indexed
    by model): the raw drop on both scales (primary; ``scale``, where declared, gives the
    word), and the drop in excess of the uniform and of the layer-shaped random heads on the
    difference scale beside it."""
    import json

    from .config import SOURCE

    col = "drop" if readout is None else f"drop_{readout}"
    ctrl = {"uniform": "ctrl_drops" if readout is None else f"ctrl_drops_{readout}"}
    if readout is not None:
        ctrl["shaped"] = f"shaped_drops_{readout}"
    src = SOURCE["drop"]
    reading = read_claim(
        models.loc[a, col].astype(float),
        models.loc[b, col].astype(float),
        src[source_family] - src["dense"],
        src[source_family] / src["dense"],
        m=m,
        scale=scale,
    )
    cells = {
        "difference": f"{reading.diff:+.3f}",
        "interval": f"{fmt_ci(reading.diff_ci)}, adjusted {fmt_ci(reading.diff_ci_adj)}",
        "ratio": f"x{reading.ratio:.2f} {fmt_ci(reading.ratio_ci_adj, False, 2)}",
        "detectable": f"{_two(reading.mdd)} ({_two(reading.mdd_adj)})",
        "power": f"{_two(reading.power)} ({_two(reading.power_adj)})",
        "scales": ", ".join(
            f"{k} {v}{' (declared)' if k == scale else ''}" for k, v in reading.words.items()
        ),
    }

    def excess(names: list[str], column: str) -> list[float]:
        out = []
        for name in names:
            c = models.loc[name, column]
            c = json.loads(c) if isinstance(c, str) else list(c)
            out.append(float(models.loc[name, col]) - float(np.mean(c)))
        return out

    for shape in ("uniform", "shaped"):
        column = ctrl.get(shape)
        if column is None or column not in models.columns:
            cells[f"excess_{shape}"] = "–"
            continue
        ea, eb = excess(a, column), excess(b, column)
        (ci,) = shift_interval(ea, eb, (0.05 / m,))
        cells[f"excess_{shape}"] = f"{np.mean(eb) - np.mean(ea):+.3f} {fmt_ci(ci)}"
    return cells, reading


__all__ = [
    "ClaimReading",
    "DifferenceReading",
    "difference_cells",
    "drop_cells",
    "fmt_ci",
    "read_claim",
    "read_gap",
    "read_shift",
    "word",
]
