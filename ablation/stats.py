"""Statistics for ablation results that know what a control is; the generic tests are
:mod:`induction.stats` (:func:`~induction.stats.permutation_p`, :func:`~induction.stats.holm`,
:func:`~induction.stats.bootstrap_ci_by_seed`, :func:`~induction.stats.seed_test`).

- :data:`DEFAULT_CONTROLS` / :data:`REPLICATION_CONTROLS`: the permutation p of a target drop
  against ``n`` random-head controls can never be below ``1 / (1 + n)`` (Phipson & Smyth
  2010): ``n >= 20`` controls are needed for ``p < 0.05``, ``n >= 100`` for a table of models
  corrected for multiple tests.
- :func:`excess_drop`: the drop in excess of the random-head controls.
- :func:`family_comparison`: :func:`~induction.stats.seed_test` (Welch's t and the exact
  permutation test across model seeds) on the drop and on the excess drop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from induction.errors import InputError
from induction.stats import SeedTest, seed_test

DEFAULT_CONTROLS = 20  # smallest n with 1 / (1 + n) < 0.05
REPLICATION_CONTROLS = 100  # room for a Holm correction over a table of models


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
    """:func:`~induction.stats.seed_test` of family ``a`` against ``b`` (one entry per model
    seed) on the ``drop`` and on the ``excess`` drop over each model's own random-head
    controls."""
    if len(a_drops) != len(a_control_drops) or len(b_drops) != len(b_control_drops):
        raise InputError("each model seed needs its drop and its list of control drops")
    a_ex = [excess_drop(d, c) for d, c in zip(a_drops, a_control_drops)]
    b_ex = [excess_drop(d, c) for d, c in zip(b_drops, b_control_drops)]
    return {"drop": seed_test(a_drops, b_drops, **kw), "excess": seed_test(a_ex, b_ex, **kw)}
