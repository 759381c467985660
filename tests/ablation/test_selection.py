"""Head selection: top-frac rounding, explicit lists, random controls."""

import pandas as pd
import pytest

from ablation.selection import (
    n_selected,
    parse_heads,
    random_controls,
    tied_scores,
    top_frac,
)
from induction.errors import InputError


def scores_frame(n_layers=8, n_heads=4):
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            rows.append({"layer": layer, "head": head, "induction": 0.0, "prefix_matching": 0.0})
    df = pd.DataFrame(rows)
    df.loc[(df.layer == 3) & (df["head"] == 1), "induction"] = 0.9
    df.loc[(df.layer == 5) & (df["head"] == 2), "induction"] = 0.8
    df.loc[(df.layer == 1) & (df["head"] == 0), "induction"] = 0.7
    df.loc[(df.layer == 2) & (df["head"] == 3), "prefix_matching"] = 0.5
    df["rank"] = df.induction.rank(ascending=False, method="first").astype(int)
    return df


def test_rounding_rule():
    assert n_selected(0.2, 32) == 7  # ceil(6.4)
    assert n_selected(0.2, 35) == 7  # float noise 7.000000000000001 does not round up to 8
    assert n_selected(0.001, 32) == 1  # at least one head
    assert n_selected(1.0, 32) == 32
    for bad in (0, -0.1, 1.5):
        with pytest.raises(InputError, match="frac"):
            n_selected(bad, 32)


def test_top_frac_and_ties():
    df = scores_frame()
    assert top_frac(df, 3 / 32) == [(1, 0), (3, 1), (5, 2)]
    top = top_frac(df, 0.2)
    assert len(top) == 7 and {(3, 1), (5, 2), (1, 0)} <= set(top)
    # ties (all zeros) broken by (layer, head) order: the next four are 0.0-0.3
    assert set(top) - {(3, 1), (5, 2), (1, 0)} == {(0, 0), (0, 1), (0, 2), (0, 3)}
    assert top_frac(df, 1 / 32, score="prefix_matching") == [(2, 3)]
    with pytest.raises(InputError, match="unknown score column"):
        top_frac(df, 0.2, score="copying")


def test_parse_heads():
    assert parse_heads("3.1, 5.0", 8, 4) == [(3, 1), (5, 0)]
    assert parse_heads("L5H0,l3h1", 8, 4) == [(3, 1), (5, 0)]
    with pytest.raises(InputError, match="named twice"):
        parse_heads("3.1,L3H1", 8, 4)
    assert parse_heads("2:3", 8, 4) == [(2, 3)]
    with pytest.raises(InputError, match="out of range"):
        parse_heads("8.0", 8, 4)
    with pytest.raises(InputError, match="out of range"):
        parse_heads("1.4", 8, 4)
    with pytest.raises(InputError, match="malformed"):
        parse_heads("3-1", 8, 4)
    with pytest.raises(InputError, match="empty"):
        parse_heads(" , ", 8, 4)


def test_random_controls():
    target = [(3, 1), (5, 2), (5, 3)]
    a = random_controls(target, 8, 4, 5, seed=1)
    assert a == random_controls(target, 8, 4, 5, seed=1)  # seeded
    assert a != random_controls(target, 8, 4, 5, seed=2)
    assert len(a) == 5 and all(len(c) == 3 for c in a)
    assert all(not set(c) & set(target) for c in a)  # drawn from the other heads
    m = random_controls(target, 8, 4, 4, seed=0, match_layers=True)
    for c in m:
        assert sorted(layer for layer, _ in c) == [3, 5, 5]
        assert not set(c) & set(target)
    # too few non-target heads: unstratified controls fall back to every head
    full = random_controls([(0, 0), (0, 1)], 1, 3, 2, seed=0)
    assert all(len(c) == 2 for c in full)


def test_layer_matched_controls_never_include_targets():
    # layer 3: two targets and exactly two non-target heads, which every control must take
    target = [(3, 0), (3, 1), (5, 0)]
    controls = random_controls(target, 8, 4, 30, seed=0, match_layers=True)
    for c in controls:
        assert not set(c) & set(target)
        assert {(3, 2), (3, 3)} <= set(c) and sorted(layer for layer, _ in c) == [3, 3, 5]
    assert len({tuple(c) for c in controls}) == 3  # layer 5's slot: heads 1, 2, 3
    # three targets, one non-target head in layer 3: an error, not a control with targets
    with pytest.raises(InputError, match=r"layer 3 has 1 non-target head\(s\) for 3 .*unstrat"):
        random_controls([(3, 0), (3, 1), (3, 2)], 8, 4, 2, seed=0, match_layers=True)


def test_tied_scores_aggregate_passes():
    df = scores_frame(n_layers=4, n_heads=2)
    df["induction"] = [0.1, 0.2, 0.9, 0.0, 0.3, 0.1, 0.2, 0.8]
    # layer 0 unique; layers 1, 2 are passes of block layer 1; layer 3 unique
    unrolled = [(0, 0), (1, 0), (1, 1), (2, 0)]
    agg = tied_scores(df, unrolled)
    row = agg[(agg.layer == 1) & (agg["head"] == 0)]
    assert float(row.induction.iloc[0]) == 0.9  # max over passes
    assert sorted(agg.layer.unique()) == [0, 1, 3]
