"""induction.stats.permutation: the empirical p by hand; seed_test's permutation p (its
relabellings from ``scipy.stats.permutation_test``) equal to a direct count over every split
and over the same seeded draws; Welch's t from scipy; pooled ranks in
tests/benchmarks/test_replication.py."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from induction.errors import InputError
from induction.stats import min_perm_p, permutation_p, seed_test
from induction.stats.permutation import TIE_SLACK


def test_permutation_p_by_hand():
    assert permutation_p(0.5, [0.1, 0.2, 0.6]) == pytest.approx(2 / 4)  # 0.6 >= 0.5
    assert permutation_p(0.5, [0.1, 0.5]) == pytest.approx(2 / 3)  # ties count
    assert permutation_p(1.0, [0.0] * 19) == pytest.approx(1 / 20)
    assert math.isnan(permutation_p(0.3, []))
    # the floor 1 / (1 + n): 20 controls reach p < 0.05, 19 do not
    assert permutation_p(9.0, [0.0] * 20) < 0.05
    assert permutation_p(9.0, [0.0] * 19) == 0.05


def _direct_stat(pooled: np.ndarray, first: list[int]) -> float:
    rest = [i for i in range(len(pooled)) if i not in first]
    return abs(np.mean(pooled[first]) - np.mean(pooled[rest]))


def _threshold(a, b) -> float:
    return abs(np.mean(a) - np.mean(b)) * (1 - TIE_SLACK) - 1e-15


# continuous values, small-integer ties, float-noise ties (0.1 + 0.2), equal arms, one value
CASES = [
    ([0.31, -0.2, 1.4, 0.05], [0.0, -0.7, 0.2]),
    ([1.0, 0.0, 2.0, 2.0], [0.0, 2.0, 0.0, 2.0, 1.0]),
    ([0.1, 0.2, 0.3, 0.3], [0.3, 0.0, 0.1, 0.2]),
    ([0.3, 0.1, 0.2], [0.2, 0.1, 0.3]),
    ([0.4], [0.1, 0.2, 0.3, 0.0]),
    ([0.5, 0.1, 0.7, 0.2, 0.9, 0.3, 0.4, 0.8], [0.1, 0.0, 0.3, 0.2, 0.2, 0.1, 0.4, 0.6]),
]


@pytest.mark.parametrize(("a", "b"), CASES)
def test_seed_test_exact_p_is_the_direct_count_over_every_split(a, b):
    pooled = np.array(a + b)
    splits = list(itertools.combinations(range(len(pooled)), len(a)))
    hits = sum(_direct_stat(pooled, list(s)) >= _threshold(a, b) for s in splits)
    res = seed_test(a, b)
    assert res.exact and res.n_perm == len(splits) == math.comb(len(pooled), len(a))
    assert res.p_perm == hits / len(splits)
    assert res.diff == float(np.mean(a) - np.mean(b))


def test_seed_test_sample_is_the_direct_count_over_the_same_seeded_draws():
    rng = np.random.default_rng(3)
    for na, nb, seed in [(6, 7, 0), (9, 5, 4), (4, 10, 11)]:
        a, b = rng.normal(0.4, 1, na), np.round(rng.normal(0, 1, nb), 1)
        pooled, n = np.concatenate([a, b]), na + nb
        draws = np.random.default_rng(seed)  # one permutation per draw, first n_a to a
        hits = sum(
            _direct_stat(pooled, list(draws.permutation(n)[:na])) >= _threshold(a, b)
            for _ in range(300)
        )
        res = seed_test(a, b, n_resamples=300, seed=seed, max_exact=10)
        assert not res.exact and res.n_perm == 300
        assert res.p_perm == (1 + hits) / 301
    # as many draws as there are splits: every split instead, exact
    assert seed_test([0.3, 0.1, 0.5], [0.2, 0.0, 0.4], n_resamples=20, max_exact=5).exact


def test_seed_test_welch_matches_scipy_and_exact_permutation_by_hand():
    a, b = [3.0, 4.0, 5.0], [1.0, 2.0, 2.5]
    res = seed_test(a, b)
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert res.t == pytest.approx(ref.statistic) and res.p_welch == pytest.approx(ref.pvalue)
    assert res.diff == pytest.approx(4 - 5.5 / 3)
    # 20 relabellings; only the observed split and its mirror reach |diff|: p = 2/20
    assert res.exact and res.n_perm == 20 and res.p_perm == pytest.approx(2 / 20)
    assert res.p_perm == min_perm_p(3, 3)
    assert seed_test([9.0, 8.0], [0.0, 1.0, 2.0]).p_perm == min_perm_p(2, 3) == 1 / 10


def test_seed_test_exact_permutation_matches_scipy_pvalue():
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
        rng=np.random.default_rng(9),
    ).pvalue
    assert abs(res.p_perm - ref) < 0.02
    assert res == seed_test(a, b, max_exact=1000, n_resamples=4000, seed=1)  # seeded
    single = seed_test([1.0], [0.0, 0.5])
    assert math.isnan(single.t) and single.exact and single.n_perm == 3
    with pytest.raises(InputError, match="one value per family"):
        seed_test([], [1.0])
