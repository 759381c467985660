"""induction.stats.multiple: Holm (1979) by hand and against the statsmodels formula."""

import math

import numpy as np
import pytest

from induction.stats import holm


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
