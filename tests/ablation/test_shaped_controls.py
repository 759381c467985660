"""Layer-shaped random controls (ablation.selection.shaped_controls): the target's heads per
layer, in layers within the band, never a target head, seeded."""

from collections import Counter

import pytest

from ablation.selection import band_half_width, shaped_controls
from induction.errors import InputError


def _profile(heads):
    return sorted(Counter(la for la, _ in heads).values())


def test_same_profile_in_band_without_targets_and_reproducible():
    target = [(6, h) for h in range(5)] + [(7, 0)]
    sets = shaped_controls(target, n_layers=8, n_heads=8, n_controls=30, seed=3, band=1)
    assert sets == shaped_controls(target, n_layers=8, n_heads=8, n_controls=30, seed=3, band=1)
    layers_seen = set()
    for s in sets:
        assert len(s) == len(target) and not set(s) & set(target)
        assert _profile(s) == _profile(target)
        by_layer = Counter(la for la, _ in s)
        pile = next(la for la, k in by_layer.items() if k == 5)
        assert pile in (5, 7)  # layer 6 has only 3 free heads; 5 and 7 are within the band
        layers_seen |= set(by_layer)
    assert layers_seen <= {5, 6, 7} and len(layers_seen) > 1


def test_band_widens_to_the_nearest_host_and_refuses_the_impossible():
    target = [(0, h) for h in range(4)]  # all of layer 0's heads
    sets = shaped_controls(target, n_layers=6, n_heads=4, n_controls=5, band=0)
    assert all({la for la, _ in s} == {1} for s in sets)  # nearest layer with 4 free heads
    with pytest.raises(InputError, match="no layer has 3 non-target heads"):
        target = [(la, h) for la in (0, 1) for h in range(3)]
        shaped_controls(target, n_layers=2, n_heads=4, n_controls=1)
    assert band_half_width(8) == 1 and band_half_width(30) == 4
