"""The shipped zoo: every model has induction heads; lineage and loop plans load right."""

import pytest
import torch

from induction import load_model
from induction.models.looped import LoopPlan
from induction.models.registry import (
    FIRST_ZOO,
    FIXED_PROTOCOL,
    FV_ZOO,
    SECOND_ZOO,
    TWELVE_LAYER_ZOO,
    model_card,
    zoo_models,
    zoo_path,
)
from induction.scores.scan import induction_scores
from lineage.log import duplication_log

SHIPPED = zoo_models()


def test_every_first_zoo_family_ships_three_seeds():
    for family in FIRST_ZOO:
        assert [n for n in SHIPPED if n.startswith(family + "-")] == [
            f"{family}-s{s}" for s in range(3)
        ]


def test_fixed_protocol_seeds_ship_in_order_the_first_with_its_checkpoints():
    for family in FIXED_PROTOCOL:
        seeds = sorted(int(n.rsplit("-s", 1)[1]) for n in SHIPPED if n.startswith(family + "-s"))
        assert seeds == list(range(len(seeds))), (family, seeds)
        if seeds:
            steps = sorted((zoo_path(f"{family}-s0") / "checkpoints").glob("step-*"))
            assert steps and all((s / "config.json").is_file() for s in steps)


#: every model trained by the fixed protocol: the first fixed zoo, the second, the 12-layer record
FIXED = [
    n
    for n in SHIPPED
    if n.rsplit("-s", 1)[0] in FIXED_PROTOCOL + SECOND_ZOO + FV_ZOO + TWELVE_LAYER_ZOO
]


@pytest.mark.parametrize("name", FIXED)
def test_fixed_protocol_card_matches_the_model(name):
    """Fixed-protocol models are shipped whether or not a head formed (nothing waited for
    one): the card's final score must be what the detector measures, whatever it is."""
    loaded = load_model(name, device="cpu")
    card = model_card(name)
    assert card["protocol"] == "fixed" and card["steps"] == card["config"]["steps"]
    scores = induction_scores(loaded, seq_len=32, batch=32, seeds=(0,), scores=("induction",))
    assert abs(scores["induction"].max() - card["max_induction_d32"]) < 0.1  # other prompts


@pytest.mark.parametrize("name", [n for n in SHIPPED if n not in FIXED])
def test_model_has_an_induction_head(name):
    loaded = load_model(name, device="cpu")
    card = model_card(name)
    assert loaded.info.default_repeat_len == card["repeat_len"] == 32
    scores = induction_scores(loaded, seq_len=32, batch=32, seeds=(0,), scores=("induction",))
    assert scores["induction"].max() >= 0.4


#: the first zoo's grown models (grown-s*, grown12-s*), whose growth waited for a head
GROWN = [n for n in SHIPPED if n.rsplit("-s", 1)[0] in FIRST_ZOO and n.startswith("grown")]
FIXED_GROWN = [n for n in FIXED if n.startswith(("lidas", "grown"))]


@pytest.mark.parametrize("name", GROWN + FIXED_GROWN)
def test_grown_log_resolves_every_layer(name):
    loaded = load_model(name, device="cpu")
    log = duplication_log(loaded)
    assert log is not None and log.final_depth == loaded.info.n_layers
    ancestors = [log.ancestor_of(layer) for layer in range(log.final_depth)]
    assert set(ancestors) <= set(range(log.initial_depth))
    assert sorted(set(ancestors)) == list(range(log.initial_depth))


@pytest.mark.parametrize("name", [n for n in SHIPPED if n.startswith("looped-")])
def test_looped_model_unrolls_with_one_hook_call_per_layer(name):
    from transformers import AutoModelForCausalLM

    from induction.models.looped import tie_layers

    loaded = load_model(name, device="cpu")
    plan = LoopPlan.load(zoo_path(name))
    assert loaded.loop_plan == plan and loaded.info.n_layers == plan.unrolled_depth
    calls = []
    hooks = [
        (f"blocks.{layer}.attn.hook_pattern", lambda x, hook: calls.append(hook.name))
        for layer in range(plan.unrolled_depth)
    ]
    tokens = torch.randint(4, 128, (2, 20))
    with torch.no_grad():
        logits = loaded.bridge.run_with_hooks(tokens, fwd_hooks=hooks)
    assert sorted(calls) == sorted(name for name, _ in hooks)
    tied = tie_layers(AutoModelForCausalLM.from_pretrained(zoo_path(name)).eval(), plan)
    with torch.no_grad():
        # use_cache=False: a KV cache indexed by layer would mix the passes of a shared layer.
        reference = tied(tokens, use_cache=False).logits
        torch.testing.assert_close(logits, reference, rtol=0, atol=1e-4)


@pytest.mark.parametrize("name", GROWN)
def test_grown_model_ships_its_formed_initial_network(name):
    card = model_card(name)
    initial = load_model(str(zoo_path(name) / card["initial_checkpoint"]), device="cpu")
    assert initial.info.n_layers == duplication_log(load_model(name)).initial_depth
    assert initial.info.default_repeat_len == 16  # the repeat length it was trained on
    scores = induction_scores(initial, batch=32, seeds=(0,), scores=("induction",))
    assert scores["induction"].max() >= 0.4  # growth waited for an induction head
    assert card["initial_step"] == duplication_log(load_model(name)).events[0].step


@pytest.mark.parametrize("name", [n for n in SHIPPED if n.startswith("grown12-")])
def test_grown12_grew_twice_with_spaced_stages(name):
    card = model_card(name)
    log = duplication_log(load_model(name, device="cpu"))
    assert log.depths() == [4, 8, 12]
    first, second = (e.step for e in log.events)
    assert second - first >= 0.25 * card["config"]["steps"]  # the planned spacing, kept
    assert second < card["steps"]
    # ab abcd cd -> ab ab abcd cd cd: every initial layer has three copies
    assert [log.ancestor_of(layer) for layer in range(12)] == [0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3]
    # the 8-layer network the second growth copied ships as stage1/
    stage1 = card["stage_checkpoints"]["1"]
    assert stage1["step"] == second
    network = load_model(str(zoo_path(name) / stage1["folder"]), device="cpu")
    assert network.info.n_layers == 8 and network.info.default_repeat_len == 32


def test_lineage_uses_the_shipped_initial_network():
    from typer.testing import CliRunner

    from induction.commands.main import app

    result = CliRunner().invoke(app, ["lineage", "grown-s0", "--top", "12", "--seeds", "1"])
    assert result.exit_code == 0, result.output
    assert "were already induction heads" in " ".join(result.output.split())
