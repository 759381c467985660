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


def test_readings_name_what_decides_them():
    """The lineage reading without a chance level (no duplication log) and with one seed
    (no p below 1) is untestable and says why; the timing reading carries its cells."""
    import pandas as pd

    from induction.replication.lineage_claim import read_lineage, read_timing

    one = read_lineage(pd.Series([6.0], index=["g-s0"]), pd.Series([7.8], index=["g-s0"]), 2)
    assert one.word == "untestable here" and "1 seeds allow no sign-flip p below 1" in one.why
    assert one.zoo == "m = 6.0 over 1 seed (6); chance 7.8, fewest possible 2"
    no_log = read_lineage(pd.Series([6.0] * 6), pd.Series([float("nan")] * 6))
    assert no_log.word == "untestable here" and "no duplication log" in no_log.why
    ma, mb = pd.Series([2.0, 3, 2, 2, 3, 2]), pd.Series([9.0, 10, 9, 10, 9, 10])
    timing = read_timing(ma, mb, pd.Series([7.8] * 6))
    assert timing.word == "agree" and timing.cells["difference"] == "-7.17"
