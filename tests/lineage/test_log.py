"""Duplication log: ancestry resolution and one-line errors for malformed logs."""

import json

import pytest

from induction.errors import LineageError
from lineage.log import DuplicationLog


def grown_2_4_8():
    log = DuplicationLog(initial_depth=2)
    log.record_copy(100, "lidas", (0, 2), 1)  # a b -> a [a b] b
    log.record_copy(200, "lidas", (0, 4), 2)  # a a b b -> a a [a a b b] b b
    return log


def test_ancestors_of_lidas_chain():
    log = grown_2_4_8()
    assert log.final_depth == 8
    assert [log.ancestor_of(i) for i in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_weighted_mix_ancestry():
    log = DuplicationLog(initial_depth=2)
    log.record_mix(5, [[(0, 1.0)], [(0, 0.5), (1, 0.5)], [(1, 1.0)]])
    assert log.ancestors(1) == {0: 0.5, 1: 0.5}
    with pytest.raises(LineageError, match="several"):
        log.ancestor_of(1)


def test_round_trip(tmp_path):
    log = grown_2_4_8()
    log.save(tmp_path / "log.json")
    assert DuplicationLog.load(tmp_path / "log.json") == log


def _bad(mutate):
    data = grown_2_4_8().to_json()
    mutate(data)
    return data


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d.update(format="other"), "not a duplication log"),
        (lambda d: d.update(version=99), "version 99"),
        (lambda d: d["events"][0].update(operator="ligo2"), "unknown operator"),
        (lambda d: d["events"][1]["layer_map"][0].__setitem__(0, [7, 1.0]), "outside the previous"),
        (lambda d: d["events"][1].update(depth_before=3), "depth_before"),
        (lambda d: d["events"][0].update(source=[1, 5]), "source span"),
        (lambda d: d["events"][1].update(step=50), "comes before"),
        (lambda d: d["events"][0].update(layer_map=[[[0, 1.0]]] * 4), "does not match"),
        (lambda d: d.update(initial_depth=0), "initial_depth"),
        (lambda d: d["events"][0].pop("layer_map"), "malformed"),
    ],
)
def test_malformed_logs_fail_with_one_line(mutate, message):
    with pytest.raises(LineageError, match=message) as err:
        DuplicationLog.from_json(_bad(mutate))
    assert "\n" not in str(err.value)


def test_depth_mismatch_and_bad_json(tmp_path):
    with pytest.raises(LineageError, match="has 6"):
        grown_2_4_8().check_depth(6)
    path = tmp_path / "log.json"
    path.write_text("{not json")
    with pytest.raises(LineageError, match="not valid JSON"):
        DuplicationLog.load(path)
    with pytest.raises(LineageError, match="not found"):
        DuplicationLog.load(tmp_path / "missing.json")
    path.write_text(json.dumps([1, 2]))
    with pytest.raises(LineageError, match="JSON object"):
        DuplicationLog.load(path)
