"""The in-context probe (induction.zoo.probe) reproduces what independent scripts found on the
shipped zoo: dense8-s4 looks up fresh maps but answers variable assignment by position."""

import pytest

from induction.models.loading import load_model
from induction.zoo.probe import gates, probe


@pytest.fixture(scope="module")
def dense8_s4():
    return load_model("dense8-s4", threads=1)


def test_lookup_passes_but_position_answers_fail(dense8_s4):
    result = probe(dense8_s4, n_seq=32)
    assert result == probe(dense8_s4, n_seq=32)  # seeded
    assert result.lookup >= 0.6 and result.lookup_chance < 0.3 and result.lookup_n > 300
    assert result.varassign_first - result.varassign_others > 0.5  # answers the first statement
    passed = {g.name: g.passed for g in gates(result)}
    assert passed == {"in-context lookup": True, "variable assignment": False,
                      "no answer by position": False}  # fmt: skip


def test_untrained_model_sits_at_chance(tiny_llama_dir):
    result = probe(load_model(str(tiny_llama_dir)), n_seq=16, seed=1)
    assert result.lookup < 0.6 and not gates(result)[0].passed
    assert 0.25 < result.varassign_chance < 0.5
