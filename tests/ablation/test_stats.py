"""ablation.stats against hand-computed values and scipy references."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from ablation import report, stats
from ablation.stats import (
    DEFAULT_CONTROLS,
    REPLICATION_CONTROLS,
    bootstrap_ci,
    bootstrap_ci_by_seed,
    excess_drop,
    family_comparison,
    holm,
    permutation_p,
    seed_test,
)
from induction.errors import InputError


def test_permutation_p_by_hand():
    assert permutation_p(0.5, [0.1, 0.2, 0.6]) == pytest.approx(2 / 4)  # 0.6 >= 0.5
    assert permutation_p(0.5, [0.1, 0.5]) == pytest.approx(2 / 3)  # ties count
    assert permutation_p(1.0, [0.0] * 19) == pytest.approx(1 / 20)
    assert math.isnan(permutation_p(0.3, []))
    # the floor 1 / (1 + n): 20 controls reach p < 0.05, 19 do not
    assert permutation_p(9.0, [0.0] * DEFAULT_CONTROLS) < 0.05
    assert permutation_p(9.0, [0.0] * (DEFAULT_CONTROLS - 1)) == 0.05
    assert REPLICATION_CONTROLS == 100 and DEFAULT_CONTROLS == 20
    # the report's old name still works and is the same function
    assert report.p_ctrl is stats.permutation_p is stats.p_ctrl


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 with m = 3: 0.03, 0.06, 0.06 (monotone: max(0.04, 0.06))
    assert holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == pytest.approx([0.02])
    adj = holm([0.01, math.nan, 0.02])
    assert adj[0] == pytest.approx(0.02) and math.isnan(adj[1]) and adj[2] == pytest.approx(0.02)
    assert holm([]) == []


def test_holm_matches_statsmodels_formula_on_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(int(rng.integers(1, 12))) ** 2
        adj = np.array(holm(p))
        order = np.argsort(p)
        m = len(p)
        ref = np.minimum(1, np.maximum.accumulate((m - np.arange(m)) * p[order]))
        assert adj[order] == pytest.approx(ref)
        assert np.all(adj >= p) and np.all(adj <= 1)
        assert np.all(np.diff(adj[order]) >= 0)  # monotone in p


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
        random_state=np.random.default_rng(5),
    ).confidence_interval
    se = np.std(clean - ablated, ddof=1) / math.sqrt(200)
    assert lo == pytest.approx(ref.low, abs=0.05 * se * 4) and hi == pytest.approx(
        ref.high, abs=0.05 * se * 4
    )
    assert lo < np.mean(clean - ablated) < hi


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


def test_seed_test_welch_matches_scipy_and_exact_permutation_by_hand():
    a, b = [3.0, 4.0, 5.0], [1.0, 2.0, 2.5]
    res = seed_test(a, b)
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert res.t == pytest.approx(ref.statistic) and res.p_welch == pytest.approx(ref.pvalue)
    assert res.diff == pytest.approx(4 - 5.5 / 3)
    # 20 relabellings; only the observed split and its mirror reach |diff|: p = 2/20
    assert res.exact and res.n_perm == 20 and res.p_perm == pytest.approx(2 / 20)
    brute = [
        abs(
            np.mean([(a + b)[i] for i in s]) - np.mean([(a + b)[i] for i in range(6) if i not in s])
        )
        for s in itertools.combinations(range(6), 3)
    ]
    assert res.p_perm == pytest.approx(np.mean(np.array(brute) >= abs(res.diff) - 1e-12))


def test_seed_test_exact_permutation_matches_scipy():
    rng = np.random.default_rng(4)
    for na, nb in [(4, 4), (3, 5), (5, 2)]:
        a, b = rng.normal(0.3, 1, na), rng.normal(0, 1, nb)
        res = seed_test(a, b)
        ref = sps.permutation_test(
            (a, b),
            lambda x, y: abs(np.mean(x) - np.mean(y)),
            permutation_type="independent",
            alternative="greater",
            n_resamples=np.inf,
        )
        assert res.exact and res.n_perm == math.comb(na + nb, na)
        assert res.p_perm == pytest.approx(ref.pvalue)


def test_seed_test_monte_carlo_when_many_relabellings():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 1, 12), rng.normal(0, 1, 12)
    res = seed_test(a, b, max_exact=1000, n_resamples=4000, seed=1)
    assert not res.exact and res.n_perm == 4000
    ref = sps.permutation_test(
        (a, b),
        lambda x, y: abs(np.mean(x) - np.mean(y)),
        permutation_type="independent",
        alternative="greater",
        n_resamples=4000,
        random_state=np.random.default_rng(9),
    ).pvalue
    assert abs(res.p_perm - ref) < 0.02
    assert res == seed_test(a, b, max_exact=1000, n_resamples=4000, seed=1)  # seeded
    single = seed_test([1.0], [0.0, 0.5])
    assert math.isnan(single.t) and single.exact and single.n_perm == 3


def test_family_comparison_on_drop_and_excess():
    # family a drops more, but its random heads drop as much more: no excess difference
    a_drop, b_drop = [0.5, 0.6, 0.55, 0.65], [0.2, 0.3, 0.25, 0.35]
    a_ctrl = [[d - x, d - x] for d, x in zip(a_drop, [0.1, 0.12, 0.08, 0.11])]
    b_ctrl = [[d - x, d - x] for d, x in zip(b_drop, [0.11, 0.08, 0.12, 0.1])]
    out = family_comparison(a_drop, a_ctrl, b_drop, b_ctrl)
    assert out["drop"].diff == pytest.approx(0.3) and out["drop"].p_perm == pytest.approx(2 / 70)
    assert out["excess"].diff == pytest.approx(0.0) and out["excess"].p_perm == 1.0
    assert excess_drop(0.5, [0.1, 0.3]) == pytest.approx(0.3)
    assert math.isnan(excess_drop(0.5, []))
    with pytest.raises(InputError, match="control drops"):
        family_comparison([0.1], [], [0.2], [[0.1]])
