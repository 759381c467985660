"""Copied heads (induction.dynamics.copies): which heads a growth event copies, where each copy
sits later, and the class each descendant ends in, on a hand-built series."""

from __future__ import annotations

import pandas as pd
import pytest

from induction.dynamics.copies import (
    arm_sentences,
    classify,
    copied_heads,
    copied_layers,
    layer_at_stage,
)
from induction.errors import InputError
from lineage.log import DuplicationLog


def _log() -> DuplicationLog:
    log = DuplicationLog(initial_depth=2)
    log.record_copy(10, "midas", (1, 2), 2)  # [0, 1, 1'] : layer 1 copied
    log.record_copy(20, "midas", (0, 1), 1)  # [0, 0', 1, 1'] : layer 0 copied
    return log


CHECKPOINTS = [  # name, step, growth, stage, depth
    ("step-10-pre", 10, "before", 0, 2),
    ("step-10", 10, "after", 1, 3),
    ("step-20-pre", 20, "before", 1, 3),
    ("step-20", 20, "after", 2, 4),
    ("final", 30, None, 2, 4),
]


def _rows(values: dict) -> pd.DataFrame:
    """Sweep rows: every (checkpoint, layer, head, score) 0.05 unless ``values`` says."""
    rows = []
    for name, step, growth, stage, depth in CHECKPOINTS:
        for layer in range(depth):
            for head in range(2):
                for score in ("induction", "previous_token"):
                    value = values.get((name, layer, head, score), 0.05)
                    rows.append({"model": "m", "checkpoint": name, "step": step,
                                 "growth": growth, "stage": stage, "depth": depth,
                                 "settings_hash": "s", "layer": layer, "head": head,
                                 "score": score, "std": 0.0, "value": value})  # fmt: skip
    return pd.DataFrame(rows)


def test_layers_are_followed_back_through_later_events():
    log = _log()
    assert copied_layers(log) == [(0, 1, [1, 2]), (1, 0, [0, 1])]
    # final [0, 0', 1, 1']: final layer 3 is stage-1 layer 2 (the copy of layer 1)
    assert [layer_at_stage(log, layer, 1) for layer in range(4)] == [0, 0, 1, 2]
    assert [layer_at_stage(log, layer, 0) for layer in range(4)] == [0, 0, 1, 1]


@pytest.mark.parametrize(
    "start, end, cls",
    [("previous-token", "previous-token", "keeps its role"), ("induction", "none", "loses it"),
     ("none", "FV", "turns FV"), ("none", "induction", "specialises"),
     ("previous-token", "induction", "specialises"), ("none", "none", "no role")],
)  # fmt: skip
def test_classes(start, end, cls):
    assert classify(start, end) == cls


def test_each_descendant_gets_its_class_and_series():
    values = {
        ("step-10-pre", 1, 0, "previous_token"): 0.9,  # copied at 10 as a previous-token head
        ("final", 2, 0, "previous_token"): 0.8,  # first copy keeps it
        ("final", 3, 0, "previous_token"): 0.1,  # second copy loses it
        ("final", 3, 1, "induction"): 0.7,  # L1H1 had no role; its second copy specialises
    }
    result = copied_heads(_rows(values), _log())
    t = result.table.set_index("descendant")
    assert t.loc["L1H0@10 -> L2H0", "class"] == "keeps its role"
    assert t.loc["L1H0@10 -> L3H0", "class"] == "loses it"
    assert t.loc["L1H1@10 -> L3H1", "class"] == "specialises"
    assert t.loc["L1H1@10 -> L2H1", "class"] == "no role"
    assert len(t) == 2 * 2 + 2 * 2  # two events, two copies of a 2-head layer each
    series = result.series[result.series.descendant == "L1H0@10 -> L3H0"]
    assert series["step"].tolist() == [10, 10, 20, 20, 30]  # the copy, then every checkpoint
    assert series["previous_token"].tolist() == [0.9, 0.05, 0.05, 0.05, 0.1]
    sentence = result.sentence()
    assert "1 became an induction head after the copy" in sentence
    # counts of one take the singular: one descendant of each class but "no role"
    assert "1 keeps its role (1 as a previous-token head), 1 loses it, 1 specialises" in sentence
    assert "5 have none" in sentence
    # only L1H0 had a role at a copy (event 10): the copy in place keeps it, the added one not
    assert "the copy left in place keeps it in 1 of 1, the added copies in 0 of 1" in sentence


def test_an_arm_pools_its_seeds_per_role():
    """Two seeds of one arm and one of another: the arm's sentence counts both seeds' copies of
    the heads that had a role, the in-place copy apart from the added ones."""
    keeps = {("step-10-pre", 1, 0, "previous_token"): 0.9, ("final", 2, 0, "previous_token"): 0.8}
    loses = {("step-10-pre", 1, 0, "previous_token"): 0.9}

    def run(name: str, values: dict):
        return copied_heads(_rows(values).assign(model=name), _log(), model=name)

    seeds = [run(f"g-s{s}", v) for s, v in enumerate((keeps, loses))]
    other = run("h-s0", {})
    g, h = arm_sentences([*seeds, other])
    assert g.startswith("g (2 seeds: 0, 1): 16 descendants of copied heads; previous-token heads:")
    assert "the copy left in place keeps the role in 1 of 2, the added copies in 0 of 2" in g
    assert g.endswith("0 copies became induction heads after the copy.")
    assert h.startswith("h (1 seed: 0): 8 descendants") and "no copied head had a role" in h


def test_a_series_without_the_pre_growth_checkpoint_is_refused():
    rows = _rows({})
    with pytest.raises(InputError, match="step-20-pre"):
        copied_heads(rows[rows.checkpoint != "step-20-pre"], _log())


def test_the_table_is_never_written_into_the_sweep_it_was_read_from(tmp_path):
    result = copied_heads(_rows({}), _log())
    result.inputs = [tmp_path / "sweep"]
    (tmp_path / "sweep").mkdir()
    with pytest.raises(InputError, match="sweep"):
        result.save(tmp_path / "sweep" / "copies.csv")
    assert result.save(tmp_path / "copies.csv").is_file()
