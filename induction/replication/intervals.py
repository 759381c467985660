"""Intervals instead of bare p-values for the drop claims (issue #41, docs/replication.md,
"Verdict words"). The statistics are :mod:`induction.stats`: the shift and ratio intervals of
the inverted permutation test (:mod:`induction.stats.intervals`), the t-test's power and
detectable difference (:mod:`induction.stats.power`); ``alpha / m`` over the ``m`` drop claims
is Holm's first step (Bonferroni), so the adjusted intervals hold simultaneously. Here:

- :func:`word`: *agree* (the interval excludes the null in the source's direction),
  *disagree* (it excludes the source's effect), *inconclusive* (it holds both);
  *untestable here* is decided before, by a gate or the design.
- :func:`read_claim`: all of it for one claim, on the difference and the ratio scale;
  :func:`drop_cells`: its cells in the verdict table.
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
    levels = (alpha, alpha / m)
    d, d_adj = shift_interval(a, b, levels)
    r, r_adj = ratio_interval(a, b, levels)
    sd = pooled_sd(a, b)
    ratio = float(b.mean() / a.mean()) if a.mean() > 0 and b.mean() > 0 else math.nan
    words = {"difference": word(d_adj, 0.0, source_diff)}
    if ratio == ratio:
        words["ratio"] = word(r_adj, 1.0, source_ratio)
    return ClaimReading(
        n_a=len(a),
        n_b=len(b),
        m=m,
        diff=float(b.mean() - a.mean()),
        diff_ci=d,
        diff_ci_adj=d_adj,
        ratio=ratio,
        ratio_ci=r,
        ratio_ci_adj=r_adj,
        sd=sd,
        mdd=detectable_difference(len(a), len(b), sd, alpha),
        mdd_adj=detectable_difference(len(a), len(b), sd, alpha / m),
        source_diff=source_diff,
        source_ratio=source_ratio,
        power=power_for(source_diff, len(a), len(b), sd, alpha),
        power_adj=power_for(source_diff, len(a), len(b), sd, alpha / m),
        words=words,
        scale=scale,
    )


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
        "detectable": f"{reading.mdd:.2f} ({reading.mdd_adj:.2f})",
        "power": f"{reading.power:.2f} ({reading.power_adj:.2f})",
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
    "drop_cells",
    "fmt_ci",
    "read_claim",
    "word",
]
