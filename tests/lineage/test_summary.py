"""Top-n summary: distinct ancestors, the headline sentence, per-ancestor tables."""

from __future__ import annotations

import pandas as pd
import pytest

from induction.errors import InputError
from lineage.ancestry import head_ancestry
from lineage.log import DuplicationLog
from lineage.summary import summarize

H = 4


def doubling_log() -> DuplicationLog:
    """2 -> 4 -> 8 -> 16 layers, each step copying the whole stack on top: layer i descends
    from initial layer i % 2, so every initial head has 8 descendants."""
    log = DuplicationLog(initial_depth=2)
    for step, depth in enumerate((2, 4, 8)):
        log.record_copy(step, "copy", (0, depth), depth)
    return log


def scores_for(strong: dict[tuple[int, int], float], n_layers: int = 16) -> pd.DataFrame:
    rows = [
        (lay, h, strong.get((lay, h), 0.01 * ((lay * H + h) % 7) / 7))
        for lay in range(n_layers)
        for h in range(H)
    ]
    return pd.DataFrame(rows, columns=["layer", "head", "induction"])


def seed_like_scores():
    # 6 strong heads from L0H1 (even layers, head 1), 4 from L1H3 (odd layers, head 3),
    # 2 from two other ancestors (L0H0 via layer 2, L1H2 via layer 5)
    strong = {(lay, 1): 0.9 - 0.01 * lay for lay in (0, 2, 4, 6, 8, 10)}
    strong |= {(lay, 3): 0.8 - 0.01 * lay for lay in (1, 3, 5, 7)}
    strong |= {(2, 0): 0.6, (5, 2): 0.55}
    return scores_for(strong)


def test_ten_of_twelve_from_two_ancestors():
    anc = head_ancestry(doubling_log(), H)
    s = summarize(anc, seed_like_scores(), top=12)
    assert s.n_distinct == 4
    assert s.headline_ancestors == ["L0H1", "L1H3"]
    assert s.headline_heads == 10
    assert s.coverage == [6, 10, 11, 12]
    assert s.sentence == (
        "10 of the 12 strongest heads descend from 2 ancestors (L0H1, L1H3); "
        "all 12 descend from 4 of the initial network's 8 heads."
    )
    assert s.layer_counts == {0: 7, 1: 5}
    assert s.detail == (
        "By layer: the 12 descend from 2 of the initial network's 2 layers (L0: 7, L1: 5); "
        "12 of the 12 score >= 0.4."
    )
    first = s.ancestors.iloc[0]
    assert first["ancestor"] == "L0H1" and first["n_top"] == 6 and first["n_descendants"] == 8
    assert first["descendants"].startswith("L0H1 0.90; L2H1 0.88")
    assert list(s.top["rank"]) == list(range(1, 13))
    assert s.top.iloc[0][["label", "ancestor"]].tolist() == ["L0H1", "L0H1"]


def test_initial_scores_mark_ancestors_that_were_induction_heads():
    anc = head_ancestry(doubling_log(), H)
    init = pd.DataFrame(
        [(lay, h, 0.7 if (lay, h) == (0, 1) else 0.1) for lay in range(2) for h in range(H)],
        columns=["layer", "head", "induction"],
    )
    s = summarize(anc, seed_like_scores(), top=12, initial_scores=init)
    by = s.ancestors.set_index("ancestor")
    assert by.loc["L0H1", "was_induction_head"]
    assert not by.loc["L1H3", "was_induction_head"]
    assert by.loc["L0H1", "ancestor_score"] == pytest.approx(0.7)
    assert s.sentence.endswith("; 1 of these 4 ancestors was already an induction head (>= 0.4).")
    d = s.to_dict()
    assert d["ancestors"][0]["was_induction_head"] is True
    assert d["n_distinct_ancestors"] == 4


def test_pre_growth_stage_scores():
    log = doubling_log()
    anc = head_ancestry(log, H, to_stage=2)  # the 8-layer checkpoint
    init = scores_for({(0, 1): 0.5}, n_layers=8)
    s = summarize(anc, seed_like_scores(), top=4, initial_scores=init)
    assert s.ancestor_stage == 2
    assert "stage-2 network" in s.sentence or "ancestor" in s.sentence
    assert set(s.ancestors["ancestor_layer"]) <= set(range(8))
    with pytest.raises(InputError, match="has layers 0..15 but the model has 8"):
        summarize(anc, seed_like_scores(), initial_scores=seed_like_scores())


def test_mixed_lineage_counts_primary_ancestors_and_notes_the_rest():
    log = DuplicationLog(initial_depth=2)
    log.record_mix(1, [[(0, 1.0)], [(0, 0.7), (1, 0.3)], [(1, 1.0)]])
    anc = head_ancestry(log, 1)
    sc = pd.DataFrame({"layer": [0, 1, 2], "head": [0, 0, 0], "induction": [0.9, 0.8, 0.1]})
    s = summarize(anc, sc, top=2)
    assert s.n_distinct == 1 and s.n_distinct_any == 2
    assert s.top.iloc[1]["ancestors"] == "L0H0 (0.70), L1H0 (0.30)"
    assert any("2 ancestors" in n for n in s.notes)


def test_fewer_scored_heads_than_top():
    anc = head_ancestry(doubling_log(), H)
    sc = seed_like_scores().head(5)
    s = summarize(anc, sc, top=12)
    assert s.n_top == 5 and s.notes


@pytest.mark.parametrize(
    "table,message",
    [
        (pd.DataFrame({"layer": [0], "head": [0]}), "lacks column"),
        (pd.DataFrame({"layer": [16], "head": [0], "induction": [0.5]}), "another model"),
        (pd.DataFrame({"layer": [0], "head": [9], "induction": [0.5]}), "heads 9..9"),
        (
            pd.DataFrame({"layer": [0, 0], "head": [1, 1], "induction": [0.5, 0.4]}),
            "more than once",
        ),
        (pd.DataFrame({"layer": ["a"], "head": [0], "induction": [0.5]}), "integers"),
    ],
)
def test_bad_score_tables(table, message):
    anc = head_ancestry(doubling_log(), H)
    with pytest.raises(InputError, match=message) as err:
        summarize(anc, table)
    assert "\n" not in str(err.value)
