"""ablation.stats: the control counts, the excess drop and the family comparison (the generic
tests are induction.stats, tests/induction/stats/)."""

import math

import pytest

from ablation import report
from ablation.stats import (
    DEFAULT_CONTROLS,
    REPLICATION_CONTROLS,
    excess_drop,
    family_comparison,
)
from induction.errors import InputError
from induction.stats import permutation_p


def test_control_counts_reach_their_p():
    # the floor 1 / (1 + n): 20 controls reach p < 0.05, 19 do not
    assert permutation_p(9.0, [0.0] * DEFAULT_CONTROLS) < 0.05
    assert permutation_p(9.0, [0.0] * (DEFAULT_CONTROLS - 1)) == 0.05
    assert REPLICATION_CONTROLS == 100 and DEFAULT_CONTROLS == 20
    # the report's name still works and is the same function
    assert report.p_ctrl is permutation_p


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
