"""SmolLM2-135M (GQA: 9 query heads, 3 key/value heads; RoPE): circuits and effects run."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2(smollm2_folder):
    import torch

    torch.set_num_threads(1)
    from induction.models.loading import load_model

    return load_model(str(smollm2_folder))


def test_gqa_weights_expand_to_query_heads(smollm2):
    from induction.scores.composition import head_weights

    w = head_weights(smollm2)
    assert w.n_kv_heads == 3 and w.W_K.shape[:2] == (30, 9) and w.gains_folded
    assert (w.W_K[:, 0] == w.W_K[:, 2]).all()  # heads 0-2 share key/value group 0


def test_circuits_on_smollm2(smollm2):
    from induction.circuits import induction_circuits

    r = induction_circuits(smollm2, top=1, batch=2, seq_len=8, lineage=False)
    assert len(r.heads) == 1 and r.key_path
    assert "key/value group" in r.key_path_note
    assert r.table["drop_key"].notna().all()
