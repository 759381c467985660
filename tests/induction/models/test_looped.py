"""Looped models: stored once, unrolled at load, same logits as the tied model."""

import json

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from induction.errors import LineageError
from induction.models.looped import LoopPlan, tie_layers, unroll_checkpoint, untie_to_stored


def tied_model(plan: LoopPlan):
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=plan.stored_layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        use_cache=False,
    )
    return tie_layers(LlamaForCausalLM(cfg).eval(), plan)


@pytest.mark.parametrize(
    "plan", [LoopPlan(block=2, loops=4), LoopPlan(block=2, loops=3, prelude=1, coda=1)]
)
def test_unrolled_checkpoint_matches_tied_model(tmp_path, plan):
    model = tied_model(plan)
    assert len(model.model.layers) == plan.unrolled_depth
    assert model.model.layers[plan.prelude] is model.model.layers[plan.prelude + plan.block]
    untie_to_stored(model, plan).save_pretrained(tmp_path)
    plan.save(tmp_path)
    unrolled = unroll_checkpoint(tmp_path).eval()
    layers = unrolled.model.layers
    assert len(layers) == plan.unrolled_depth == unrolled.config.num_hidden_layers
    assert len({id(layer) for layer in layers}) == plan.unrolled_depth  # separate copies
    tokens = torch.randint(0, 64, (2, 10))
    with torch.no_grad():
        assert torch.equal(unrolled(tokens).logits, model(tokens).logits)


def test_plan_bookkeeping():
    plan = LoopPlan(block=2, loops=3, prelude=1, coda=1)
    assert plan.stored_index == [0, 1, 2, 1, 2, 1, 2, 3]
    assert plan.unrolled_layers == [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2), (3, 0)]


def test_bad_plan(tmp_path):
    plan = {
        "format": "induction-workbench/loop-plan",
        "block": 0,
        "loops": 2,
        "prelude": 0,
        "coda": 0,
    }
    (tmp_path / "loop_plan.json").write_text(json.dumps(plan))
    with pytest.raises(LineageError, match="block"):
        LoopPlan.load(tmp_path)
