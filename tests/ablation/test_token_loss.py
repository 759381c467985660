"""The token-loss difference (Olsson et al. 2022) under head ablation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ablation import token_loss as TL
from ablation.hooks import HeadAblation
from ablation.run import HeadPlan
from induction.errors import InputError


@pytest.fixture(scope="module")
def lidas8():
    from induction import load_model

    return load_model("lidas8", device="cpu")


def test_windows_follow_olsson_at_this_length():
    early, late = TL.windows(96)
    assert early == (3, 9) and late == (89, 95)  # predicted positions 0..94
    early, late = TL.windows(512)
    assert early == (19, 51) and late == (479, 511)  # about token 50 and token 500
    with pytest.raises(InputError, match=">= 24 tokens"):
        TL.windows(20)


def test_held_out_zoo_text_is_seeded():
    a, b, c = TL.zoo_text(4, 96, 0), TL.zoo_text(4, 96, 0), TL.zoo_text(4, 96, 1)
    assert a.shape == (4, 96) and torch.equal(a, b) and not torch.equal(a, c)


def test_natural_text_windows_are_seeded_and_start_with_bos(lidas8):
    tok = lidas8.tokenizer
    a, b = TL.natural_text(tok, 3, 64, 0), TL.natural_text(tok, 3, 64, 0)
    assert a.shape == (3, 64) and torch.equal(a, b)
    assert (a[:, 0] == tok.bos_token_id).all()
    with pytest.raises(InputError, match="at most"):
        TL.natural_text(tok, 10_000, 64, 0)


def test_a_model_that_learns_in_context_loses_less_late_and_ablation_undoes_it(lidas8):
    tokens = TL.zoo_text(16, 96, 0)
    clean = TL.loss_differences(lidas8, tokens)
    assert clean.shape == (16,) and clean.mean() < -0.3  # copies in the text: later is easier
    nothing = TL.loss_differences(lidas8, tokens, HeadAblation([]))
    np.testing.assert_allclose(nothing, clean, rtol=0, atol=1e-6)
    every = [(la, h) for la in range(8) for h in range(8)]
    ablated = TL.loss_differences(lidas8, tokens, HeadAblation(every))
    assert ablated.mean() > clean.mean() + 0.3  # no attention heads: no in-context learning


def test_run_reports_the_plans_head_sets(lidas8):
    plan = HeadPlan(target=[(5, 1), (6, 0)], controls=[[(0, 1), (1, 2)], [(2, 3), (3, 4)]],
                    selection="test")  # fmt: skip
    result = TL.run(lidas8, plan, n=8, seed=0)
    t = result.table
    assert list(t["set"]) == ["ablated", "control0", "control1"]  # the report's labels
    assert list(t["kind"]) == ["target", "control", "control"]
    assert (t["n_heads"] == 2).all()
    s = result.summary()
    assert s["n_controls"] == 2 and 1 / 3 <= s["p_controls"] <= 1
    np.testing.assert_allclose(t["diff"] - result.clean, t["effect"], atol=1e-6)
    assert "token-loss difference" in result.line()
    frame = result.to_frame()
    assert set(frame["model"]) == {"lidas8-s0"}
    again = TL.run(lidas8, plan, n=8, seed=0)  # same seed, same numbers
    np.testing.assert_allclose(again.table["effect"], t["effect"], atol=0)


def test_cached_head_sets_are_served_and_a_damaged_entry_is_rebuilt(lidas8, tmp_path, capsys):
    """``cache=``: one sealed file per head set (clean included); a second run reads them and
    gives the same numbers; an edited entry is noted on stderr and computed again."""
    import json

    plan = HeadPlan(target=[(5, 1)], controls=[[(0, 1)]], selection="test")
    first = TL.run(lidas8, plan, n=4, seed=0, mode="mean", cache=tmp_path)
    files = sorted(tmp_path.rglob("*.json"))
    assert len(files) == 3  # clean, target, control
    again = TL.run(lidas8, plan, n=4, seed=0, mode="mean", cache=tmp_path)
    np.testing.assert_allclose(again.table["effect"], first.table["effect"], atol=0)
    assert again.clean == first.clean
    target = next(f for f in files if json.loads(f.read_text())["heads"] == [[5, 1]])
    record = json.loads(target.read_text())
    record["diff"][0] += 1.0  # an edit the seal does not cover
    target.write_text(json.dumps(record))
    rebuilt = TL.run(lidas8, plan, n=4, seed=0, mode="mean", cache=tmp_path)
    assert "damaged" in capsys.readouterr().err
    np.testing.assert_allclose(rebuilt.table["effect"], first.table["effect"], atol=0)
    uncached = TL.run(lidas8, plan, n=4, seed=0, mode="mean")
    np.testing.assert_allclose(uncached.table["effect"], first.table["effect"], atol=0)
