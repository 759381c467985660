"""The source's lineage claim against chance (induction/replication/lineage_claim.py): the
chance level of ``m`` for random heads, from a shipped model's duplication log."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from induction.replication.lineage_claim import (
    chance_ancestors,
    descendants_per_head,
    fewest_holding,
)

MODELS = Path(__file__).resolve().parents[3] / "induction" / "zoo" / "models"


def test_fewest_holding_takes_the_largest_counts_first():
    counts = np.array([[5, 1, 1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 1, 1, 0], [12] + [0] * 7])
    assert fewest_holding(counts, 10).tolist() == [6, 5, 1]


def test_chance_needs_ten_ancestors_where_no_head_shares_one():
    """A dense model's 64 heads are their own ancestors: 12 random heads come from 12, and
    10 of them need 10."""
    assert chance_ancestors([1] * 64, samples=200) == 10.0


def test_chance_of_a_grown_model_from_its_log():
    """grown8rt-s0 copies initial layer 3 four times: 24 heads with one descendant, 8 with
    five. Random heads then share ancestors, so chance is below 10; the figure depends on the
    structure, not on which layer was copied, and is seeded."""
    per = descendants_per_head(MODELS / "grown8rt-s0")
    assert per is not None and sorted(per) == [1] * 24 + [5] * 8
    middle = descendants_per_head(MODELS / "grown8r-s0")  # copies initial layer 1
    assert middle is not None and middle != per and sorted(middle) == sorted(per)
    chance = chance_ancestors(per)
    assert 7.6 < chance < 7.95 and chance == chance_ancestors(middle)
    assert descendants_per_head(MODELS / "dense8r-s0") is None  # not grown
    assert descendants_per_head(None) is None
