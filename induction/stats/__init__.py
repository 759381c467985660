"""The project's statistics, one idea per module; every job imports them from here.

- :mod:`.spread`: mean, sd and Student-t interval over prompt seeds (``scipy.stats.t``).
- :mod:`.permutation`: a value against control draws (:func:`permutation_p`), two samples
  (:func:`seed_test`: Welch's t and the permutation test, both through scipy), several models'
  ranks pooled (:func:`pooled_rank_p`).
- :mod:`.multiple`: Holm's step-down adjustment (:func:`holm`; no scipy function).
- :mod:`.bootstrap`: percentile bootstrap of a mean paired difference (hand-written: scipy's
  ends differ in the last digits, see the module).
- :mod:`.intervals`: the permutation test inverted into shift and ratio intervals, and the
  one-sample sign-flip test into an interval of a mean.
- :mod:`.power`: the t-test's power and detectable difference, two samples and one
  (``scipy.stats.nct``).

Domain reductions stay with their jobs: ``ablation.stats`` (drop in excess of the controls,
family comparison), ``induction.replication.stats`` (tables), ``induction.replication.intervals``
(verdict words). Light to import: numpy only; torch and scipy load on first use.
"""

from __future__ import annotations

from .bootstrap import bootstrap_ci, bootstrap_ci_by_seed
from .intervals import (
    finite_arms,
    mean_interval,
    min_sign_flip_p,
    ratio_interval,
    shift_interval,
)
from .multiple import holm
from .permutation import (
    MAX_EXACT_RELABELINGS,
    SeedTest,
    min_perm_p,
    permutation_p,
    pooled_rank_p,
    seed_test,
)
from .power import (
    POWER,
    detectable_difference,
    one_sample_detectable,
    one_sample_power,
    pooled_sd,
    power_for,
)
from .spread import CI_LEVEL, Spread, sample_std, spread, t_quantile

__all__ = [
    "CI_LEVEL",
    "MAX_EXACT_RELABELINGS",
    "POWER",
    "SeedTest",
    "Spread",
    "bootstrap_ci",
    "bootstrap_ci_by_seed",
    "detectable_difference",
    "finite_arms",
    "holm",
    "mean_interval",
    "min_sign_flip_p",
    "one_sample_detectable",
    "one_sample_power",
    "min_perm_p",
    "permutation_p",
    "pooled_rank_p",
    "pooled_sd",
    "power_for",
    "ratio_interval",
    "sample_std",
    "seed_test",
    "shift_interval",
    "spread",
    "t_quantile",
]
