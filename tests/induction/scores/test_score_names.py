"""The one registry of head scores (induction.scores.score_names.HEAD_SCORES): the detector's
own scores are entries of it, and a score a plugin registers reaches every job that ranks
heads (issue #43 item 2)."""

from __future__ import annotations

from typing import get_args

import pandas as pd
import pytest

from induction.errors import InputError
from induction.scores import score_names as S


def test_the_detectors_scores_are_registry_entries():
    assert S.SCORES == get_args(S.ScoreName)  # the typed names and the registry agree
    assert [S.HEAD_SCORES[n].source for n in S.SCORES] == ["pattern"] * 4 + ["weights"]
    assert S.ATTENTION_SCORES == S.SCORES[:4]
    assert S.TL_SCORES == ("induction", "duplicate_token", "previous_token")
    assert list(S.HEAD_SCORE_PROVIDERS) == [S.FV_SCORE]
    assert S.head_kind("fv") == "FV head" and S.default_threshold("fv") is None
    assert S.head_kind("induction") == "induction head" and S.default_threshold("induction") == 0.4


@pytest.fixture
def layer_score():
    """A plugin's score: the layer index, so the deepest heads rank first."""

    def provider(loaded) -> pd.DataFrame:
        n_layers, n_heads = loaded.info.n_layers, loaded.info.n_heads
        rows = [(la, h, float(la)) for la in range(n_layers) for h in range(n_heads)]
        return pd.DataFrame(rows, columns=["layer", "head", "depth_rank"])

    S.register_head_score("depth_rank", provider, head_kind="deep head", threshold=1.0)
    yield provider
    del S.HEAD_SCORES["depth_rank"]


def test_a_registered_score_ranks_heads_in_ablation_and_names_them(layer_score, tiny_llama_dir):
    from ablation.run import compute_scores
    from induction.models.loading import load_model

    loaded = load_model(str(tiny_llama_dir), device="cpu")
    table = compute_scores(loaded, "depth_rank")
    assert table["depth_rank"].max() == loaded.info.n_layers - 1
    assert "depth_rank" in S.HEAD_SCORE_PROVIDERS and "depth_rank" not in S.SCORES
    assert S.head_kind("depth_rank") == "deep head" and S.default_threshold("depth_rank") == 1.0


def test_the_detectors_scores_cannot_be_replaced_and_unknown_ones_say_how_to_add_one():
    with pytest.raises(InputError, match="one of the detector's scores"):
        S.register_head_score("induction", lambda loaded: None)
    with pytest.raises(InputError, match="register_head_score"):
        S.head_score_provider("nope")
