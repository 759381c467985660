"""The shortcut audit helpers can fail: a rule above chance and a biased position are caught."""

import numpy as np

from ablation.baselines import UNIFORM_P, chance_check, mode, position_uniformity


def test_chance_check_catches_a_rule_above_chance():
    rng = np.random.default_rng(0)
    chance = np.full(2000, 0.1)
    assert chance_check("blind", rng.random(2000) < 0.1, chance).ok
    check = chance_check("shortcut", rng.random(2000) < 0.3, chance)
    assert not check.ok and str(check).startswith("shortcut: 0.29")
    assert chance_check("reads content", rng.random(2000) < 0.02, chance, one_sided=True).ok


def test_position_uniformity_catches_a_fixed_position():
    rng = np.random.default_rng(1)
    sizes = rng.integers(3, 10, 2000)
    assert position_uniformity(rng.integers(0, sizes), sizes)[0] > UNIFORM_P
    assert position_uniformity(np.zeros(2000, int), sizes)[0] < UNIFORM_P  # always the first
    assert mode([3, 1, 1, 3, 2]) == 3  # ties: the earliest
