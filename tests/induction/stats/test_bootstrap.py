"""induction.stats.bootstrap: exact small cases, and the same resamples as
``scipy.stats.bootstrap`` (whose own interval ends differ in the last digits: the module's
docstring says why the interval stays hand-written)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from induction.errors import InputError
from induction.stats import bootstrap_ci, bootstrap_ci_by_seed


def test_bootstrap_ci_two_items_exact_quantiles():
    # drops (1, 0): a resampled mean is 1, 0.5 or 0 with probability 1/4, 1/2, 1/4, so the
    # 2.5% and 97.5% quantiles are 0 and 1, and the 50% interval (alpha 0.5) is [0.5, 0.5]
    lo, hi = bootstrap_ci([1.0, 1.0], [0.0, 1.0], n_boot=20_000, seed=0)
    assert (lo, hi) == (0.0, 1.0)
    lo, hi = bootstrap_ci([1.0, 1.0], [0.0, 1.0], n_boot=20_000, seed=0, alpha=0.5)
    assert lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    # constant drops: a point; lower-is-better metrics flip the sign
    assert bootstrap_ci([0.2] * 5, [0.5] * 5, n_boot=50, higher_is_better=False) == pytest.approx(
        (0.3, 0.3)
    )
    assert bootstrap_ci([1, 0, 1], [0, 0, 1], seed=3) == bootstrap_ci([1, 0, 1], [0, 0, 1], seed=3)
    with pytest.raises(InputError, match="paired"):
        bootstrap_ci([1, 0], [1])


def test_bootstrap_ci_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(1)
    clean = rng.random(200)
    ablated = clean - rng.normal(0.1, 0.3, 200)
    lo, hi = bootstrap_ci(clean, ablated, n_boot=20_000, seed=0)
    ref = sps.bootstrap(
        (clean - ablated,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        rng=np.random.default_rng(5),
    ).confidence_interval
    se = np.std(clean - ablated, ddof=1) / math.sqrt(200)
    assert lo == pytest.approx(ref.low, abs=0.05 * se * 4) and hi == pytest.approx(
        ref.high, abs=0.05 * se * 4
    )
    assert lo < np.mean(clean - ablated) < hi


def _mean_of_means(*samples, axis=-1):
    total = np.zeros(samples[0].shape[:-1])
    for s in samples:
        total += s.mean(axis=axis)
    return total / len(samples)


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_bootstrap_resamples_are_scipys_and_only_its_quantile_level_differs(alpha):
    """The same seed gives scipy's resampled means exactly; the interval is their quantiles at
    ``alpha / 2`` and ``1 - alpha / 2``. scipy takes them at ``(1 - confidence_level) / 2``,
    which is not ``alpha / 2`` in floating point, so its ends may move in the last digits."""
    rng = np.random.default_rng(7)
    for trial in range(5):
        sizes = rng.integers(2, 12, size=int(rng.integers(1, 4)))
        clean = [rng.random(n) for n in sizes]
        ablated = [rng.random(n) for n in sizes]
        diffs = tuple(c - a for c, a in zip(clean, ablated))
        res = sps.bootstrap(
            diffs,
            _mean_of_means,
            n_resamples=300,
            method="percentile",
            confidence_level=1 - alpha,
            rng=np.random.default_rng(trial),
        )
        expected = tuple(np.quantile(res.bootstrap_distribution, [alpha / 2, 1 - alpha / 2]))
        got = bootstrap_ci_by_seed(clean, ablated, n_boot=300, seed=trial, alpha=alpha)
        assert got == expected
        if len(sizes) == 1:
            assert bootstrap_ci(clean[0], ablated[0], n_boot=300, seed=trial, alpha=alpha) == got
        ci = res.confidence_interval
        assert got == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert (1 - (1 - alpha)) / 2 != alpha / 2  # the level scipy's ends use


def test_bootstrap_ci_by_seed_resamples_within_seeds():
    # seed 0: drops all 1; seed 1: drops (0, 1). Mean over seeds = (1 + m1) / 2 with m1 in
    # {0, 0.5, 1} at 1/4, 1/2, 1/4: quantiles 0.5 and 1
    lo, hi = bootstrap_ci_by_seed([[1, 1], [1, 1]], [[0, 0], [1, 0]], n_boot=20_000, seed=0)
    assert (lo, hi) == (0.5, 1.0)
    # one seed reduces to bootstrap_ci
    one = bootstrap_ci_by_seed([[1, 0, 1, 1]], [[0, 0, 1, 0]], n_boot=500, seed=2)
    assert one == bootstrap_ci([1, 0, 1, 1], [0, 0, 1, 0], n_boot=500, seed=2)
    with pytest.raises(InputError, match="same prompt seeds"):
        bootstrap_ci_by_seed([[1]], [[1], [0]])
