"""Zoo training smoke tests: a few steps of each family, determinism, the CLI."""

import json

import torch
from typer.testing import CliRunner

from induction import load_model
from induction.cli import app
from induction.zoo.train import ZooTrainConfig, train


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
    assert loaded.lineage.final_depth == 8 and loaded.lineage.events[0].step == 2
    tokens = torch.randint(4, 128, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.bridge(tokens), model.eval()(tokens).logits, rtol=0, atol=1e-5
        )


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
