"""Intervals instead of bare p-values for the drop claims (issue #41, docs/replication.md,
"Verdict words").

- :func:`shift_interval` / :func:`ratio_interval`: the exact two-sided permutation test of
  :func:`ablation.stats.seed_test` inverted (Lehmann 1963; Ernst 2004, "Permutation methods",
  section 3). The interval holds every difference ``delta`` (every ratio ``rho``) that the test
  of ``b - delta`` against ``a`` (of ``b / rho`` against ``a``) does not reject at ``alpha``;
  the arms are unpaired (the gates leave out different seeds per arm). Exact: each relabelling's
  statistic is linear in the parameter, so ``p`` changes only where two statistics cross, and
  every crossing and every gap between crossings is tested. ``alpha / m`` over the ``m`` drop
  claims is Holm's first step (Bonferroni): the adjusted intervals hold simultaneously.
- :func:`detectable_difference` / :func:`power_for`: the two-sample t-test's power from the
  noncentral t (pooled sd, ``n_a + n_b - 2`` df) at ``alpha`` and ``alpha / m``.
- :func:`word`: *agree* (the interval excludes the null in the source's direction),
  *disagree* (it excludes the source's effect), *inconclusive* (it holds both);
  *untestable here* is decided before, by a gate or the design.
- :func:`read_claim`: all of it for one claim, on the difference and the ratio scale.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from induction.errors import InputError

MAX_EXACT_SPLITS = 100_000  # every relabelling up to this many, else a seeded sample
SAMPLED_SPLITS = 20_000
POWER = 0.8  # the power a detectable difference is quoted at
_SLACK = 1e-12  # relative slack for float ties, as ablation.stats.seed_test
_MIN_SD = 1e-9  # below this spread (float noise of equal values) a t-test means nothing


def _splits(n: int, k: int, seed: int = 0) -> np.ndarray:
    """Boolean ``(splits, n)``: which values go to the second group; the observed split (the
    last ``k``) is row 0. Every split up to :data:`MAX_EXACT_SPLITS`, else a seeded sample."""
    observed = np.r_[np.zeros(n - k, bool), np.ones(k, bool)]
    total = math.comb(n, k)
    if total <= MAX_EXACT_SPLITS:
        rows = np.zeros((total, n), bool)
        for i, idx in enumerate(itertools.combinations(range(n), k)):
            rows[i, list(idx)] = True
        order = np.argsort(~(rows == observed).all(1), kind="stable")
        return rows[order]
    rng = np.random.default_rng(seed)
    rows = np.zeros((SAMPLED_SPLITS + 1, n), bool)
    rows[0] = observed
    for i in range(1, SAMPLED_SPLITS + 1):
        rows[i, rng.permutation(n)[:k]] = True
    return rows


def _invert(v: np.ndarray, w: np.ndarray, k: int, alphas: Sequence[float]) -> list[tuple]:
    """Hull of ``{theta: p(theta) > alpha}`` for each ``alpha``, where the pooled values are
    ``v + theta * w`` (the last ``k`` the second group) and ``p`` is the two-sided
    permutation p of the difference in group means (ties count, as in ``seed_test``).
    ``-inf``/``inf`` where the set is unbounded."""
    n = len(v)
    rows = _splits(n, k)
    wa = np.where(rows, 1.0 / k, -1.0 / (n - k))  # mean(second) - mean(first) as weights
    a_s, b_s = wa @ v, wa @ w  # each split's statistic is a_s + theta * b_s
    a0, b0 = a_s[0], b_s[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = np.concatenate([-(a_s - a0) / (b_s - b0), -(a_s + a0) / (b_s + b0)])
    cross = np.unique(cross[np.isfinite(cross)])
    if len(cross) == 0:  # every statistic parallel to the observed one: p is constant
        cross = np.array([0.0])
    span = max(1.0, float(np.abs(cross).max()))
    points = np.concatenate(
        [cross, (cross[:-1] + cross[1:]) / 2, [cross[0] - span, cross[-1] + span]]
    )
    p = np.empty(len(points))
    for i in range(0, len(points), 256):  # chunks keep memory at 256 x splits
        th = points[i : i + 256, None]
        stat = np.abs(a_s[None, :] + th * b_s[None, :])
        obs = np.abs(a0 + th * b0)
        p[i : i + 256] = (stat >= obs * (1 - _SLACK) - 1e-15).mean(1)
    out = []
    for alpha in alphas:
        ok = points[p > alpha]
        if len(ok) == 0:
            out.append((math.nan, math.nan))
            continue
        lo = -math.inf if ok.min() < cross[0] else float(ok.min())
        hi = math.inf if ok.max() > cross[-1] else float(ok.max())
        out.append((lo, hi))
    return out


def _arrays(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 1 or len(b) < 1 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("an interval needs at least one finite value per arm")
    return a, b


def shift_interval(
    a: ArrayLike, b: ArrayLike, alphas: Sequence[float] = (0.05,)
) -> list[tuple[float, float]]:
    """``(lo, hi)`` of ``mean(b) - mean(a)`` for each level ``1 - alpha``: every shift
    ``delta`` with ``b - delta`` and ``a`` not told apart by the permutation test at
    ``alpha`` (unbounded, ``-inf``/``inf``, where the seeds allow no ``p <= alpha``)."""
    a, b = _arrays(a, b)
    v = np.concatenate([a, b])
    w = np.r_[np.zeros(len(a)), -np.ones(len(b))]
    return _invert(v, w, len(b), alphas)


def ratio_interval(
    a: ArrayLike, b: ArrayLike, alphas: Sequence[float] = (0.05,)
) -> list[tuple[float, float]]:
    """``(lo, hi)`` of ``mean(b) / mean(a)`` for each level ``1 - alpha``: every ratio
    ``rho > 0`` with ``b / rho`` and ``a`` not told apart by the permutation test at
    ``alpha`` (``hi = inf`` where no ratio is too large). Needs positive drops in both arms
    (a ratio of a drop that is not one means nothing); NaN otherwise."""
    a, b = _arrays(a, b)
    if a.mean() <= 0 or b.mean() <= 0:
        return [(math.nan, math.nan) for _ in alphas]
    v = np.r_[a, np.zeros(len(b))]
    w = np.r_[np.zeros(len(a)), b]  # theta = 1 / rho scales the second arm
    out = []
    for lo_u, hi_u in _invert(v, w, len(b), alphas):
        if lo_u != lo_u:
            out.append((math.nan, math.nan))
            continue
        lo = 0.0 if hi_u == math.inf else 1.0 / hi_u
        hi = math.inf if lo_u <= 0 else 1.0 / lo_u
        out.append((lo, hi))
    return out


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

    @property
    def word(self) -> str:
        """The row's word: the two scales' word where they agree, else *inconclusive*."""
        found = set(self.words.values())
        return found.pop() if len(found) == 1 else "inconclusive"


def read_claim(
    a: ArrayLike,
    b: ArrayLike,
    source_diff: float,
    source_ratio: float,
    m: int = 1,
    alpha: float = 0.05,
) -> ClaimReading:
    """Arm ``b``'s drops against arm ``a``'s (one per seed), with the source's effect as a
    difference and as a ratio, Holm's first step over ``m`` claims."""
    if m < 1 or not 0 < alpha < 1:
        raise InputError(f"need m >= 1 and 0 < alpha < 1, got m={m}, alpha={alpha}")
    a, b = _arrays(a, b)
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
    )


def fmt_ci(ci: tuple[float, float], signed: bool = True, digits: int = 3) -> str:
    """``[-0.046, +0.198]``; ``±inf`` ends as such."""

    def one(x: float) -> str:
        if math.isinf(x):
            return "-inf" if x < 0 else "+inf" if signed else "inf"
        return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"

    return f"[{one(ci[0])}, {one(ci[1])}]"


def drop_cells(models, a: list[str], b: list[str], readout: str | None, source_family: str,
               m: int) -> tuple[dict, ClaimReading]:  # fmt: skip
    """The interval cells of a drop claim, arm ``b`` (model names) against ``a`` (dense), on
    ``readout`` (``None``: the task metric, F1/EM) from the per-model rows ``models`` (indexed
    by model): the raw drop on both scales (primary), and the drop in excess of the uniform
    and of the layer-shaped random heads on the difference scale beside it."""
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
    )
    cells = {
        "difference": f"{reading.diff:+.3f}",
        "interval": f"{fmt_ci(reading.diff_ci)}, adjusted {fmt_ci(reading.diff_ci_adj)}",
        "ratio": f"x{reading.ratio:.2f} {fmt_ci(reading.ratio_ci_adj, False, 2)}",
        "detectable": f"{reading.mdd:.2f} ({reading.mdd_adj:.2f})",
        "power": f"{reading.power:.2f} ({reading.power_adj:.2f})",
        "scales": ", ".join(f"{k} {v}" for k, v in reading.words.items()),
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
    "drop_cells",
    "ClaimReading",
    "detectable_difference",
    "fmt_ci",
    "pooled_sd",
    "power_for",
    "ratio_interval",
    "read_claim",
    "shift_interval",
    "word",
]
