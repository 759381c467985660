"""Zoo training smoke tests: a few steps of each family, determinism, the CLI."""

import json

import pytest
import torch
from typer.testing import CliRunner

from induction import load_model
from induction.cli import app
from induction.errors import InputError
from lineage.log import duplication_log
from zoo.train import ZooTrainConfig, train


def tiny(family, **kw):
    base = dict(family=family, steps=4, max_steps=4, eval_every=2, d_mlp=64, batch=4, seq_len=48)
    return ZooTrainConfig(**{**base, "seq_len_before": 48, **kw})


def test_same_seed_same_weights_different_seed_different():
    a, _ = train(tiny("dense", depth=2), progress=False)
    b, _ = train(tiny("dense", depth=2), progress=False)
    c, _ = train(tiny("dense", depth=2, seed=1), progress=False)
    for (name, pa), pb, pc in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values()
    ):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)


def test_grown_model_grows_after_formation_and_reloads(tmp_path):
    # formed_threshold 0: "formed" at the first check, so growth happens at grow_at.
    cfg = tiny("grown", formed_threshold=0.0, grow_at=(0.5,))
    model, card = train(cfg, out=tmp_path / "g", progress=False)
    assert card["effective_depth"] == 8 and card["formed_at_step"] == 2
    assert 0.5 < card["flops_vs_dense"] < 1.0
    loaded = load_model(str(tmp_path / "g"), device="cpu")
    log = duplication_log(loaded)
    assert log.final_depth == 8 and log.events[0].step == 2
    tokens = torch.randint(4, 128, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.bridge(tokens), model.eval()(tokens).logits, rtol=0, atol=1e-5
        )


def test_two_growth_stages_keep_their_spacing_when_formation_is_late(tmp_path):
    # Planned at steps 1 and 3; the first check (step 4) finds a head ("formed" at threshold
    # 0), so the first event moves to step 4 and the second keeps its distance: step 6.
    cfg = tiny("grown", formed_threshold=0.0, grow_at=(0.1, 0.3), depth=12, steps=12, max_steps=12)
    cfg.eval_every = 4
    _, card = train(cfg, out=tmp_path / "g12", progress=False)
    assert card["name"] == "grown12-s0" and card["effective_depth"] == 12
    log = duplication_log(load_model(str(tmp_path / "g12"), device="cpu"))
    assert [e.step for e in log.events] == [4, 6]
    assert log.depths() == [4, 8, 12]
    # LIDAS twice: ab abcd cd -> ab ab abcd cd cd; every initial layer has three copies
    assert [log.ancestor_of(layer) for layer in range(12)] == [0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3]
    # the 8-layer network the second event copied is kept, and lineage --stage 1 scores it
    assert card["stage_checkpoints"] == {"1": {"folder": "stage1", "step": 6}}
    stage1 = load_model(str(tmp_path / "g12" / "stage1"), device="cpu")
    assert stage1.info.n_layers == 8 and stage1.duplication_log_path is None

    import lineage

    result = lineage.trace(str(tmp_path / "g12"), stage=1, top=3, seeds=1, batch=2)
    assert result.summary.ancestors["ancestor_score"].notna().all()


def test_grown_depth_must_match_the_growth_events():
    with pytest.raises(InputError, match="ends at 12 layers, not depth 8"):
        train(tiny("grown", grow_at=(0.25, 0.5)), progress=False)


def test_looped_model_saves_block_once(tmp_path):
    _, card = train(tiny("looped"), out=tmp_path / "l", progress=False)
    config = json.loads((tmp_path / "l" / "config.json").read_text())
    assert config["num_hidden_layers"] == 2 and card["effective_depth"] == 8
    assert load_model(str(tmp_path / "l"), device="cpu").info.n_layers == 8


def test_cli_trains_and_refuses_bad_input(tmp_path):
    runner = CliRunner()
    out = tmp_path / "m"
    result = runner.invoke(
        app, ["zoo", "train", "dense", "--seed", "3", "--steps", "2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "card.json").read_text())["seed"] == 3
    result = runner.invoke(app, ["zoo", "train", "dense", "--steps", "2", "--out", str(out)])
    assert result.exit_code == 2 and "already exists" in result.output
    result = runner.invoke(app, ["zoo", "train", "recurrent", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "unknown zoo family" in result.output
    for args, message in (
        (["dense", "--grow-at", "0.3"], "grown family only"),
        (["grown", "--grow-at", "0.5,0.2"], "increasing fractions"),
        (["grown", "--grow-at", "1.5"], "increasing fractions"),
        (["grown", "--grow-at", "x"], "increasing fractions"),
    ):
        result = runner.invoke(app, ["zoo", "train", *args, "--out", str(tmp_path / "y")])
        assert result.exit_code == 2 and message in result.output, result.output
