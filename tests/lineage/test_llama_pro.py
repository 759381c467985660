"""LLaMA-Pro block expansion (Wu et al. 2024): zero-output copies keep the function exactly,
in memory and on disk, and the duplication log maps each copy to its source."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)
from typer.testing import CliRunner

from induction.commands.main import app
from induction.errors import InputError, LineageError
from induction.models.layers import decoder_layers
from lineage.checkpoint import grow_checkpoint
from lineage.growth import grow, llama_pro, llama_pro_order, output_projection_names
from lineage.log import DuplicationLog


def tiny_llama(n_layers=4):
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=n_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(cfg).eval()


def test_order_after_every_kth_layer():
    assert llama_pro_order(8, 4) == ([0, 1, 2, 3, 3, 4, 5, 6, 7, 7], [4, 9])
    assert llama_pro_order(4, 1) == ([0, 0, 1, 1, 2, 2, 3, 3], [1, 3, 5, 7])
    with pytest.raises(InputError, match="divide"):
        llama_pro_order(8, 3)


def test_in_memory_growth_keeps_logits_and_zeroes_outputs():
    model = tiny_llama()
    original = copy.deepcopy(model)
    tokens = torch.randint(0, 64, (2, 12))
    log = DuplicationLog(initial_depth=4)
    event, opt = grow(model, "llama-pro", every=2, log=log, step=5)
    assert opt is None and event.operator == "llama-pro" and event.zeroed == [2, 5]
    layers = decoder_layers(model)
    assert len(layers) == 6 == model.config.num_hidden_layers
    for j in event.zeroed:
        assert not layers[j].self_attn.o_proj.weight.any()
        assert not layers[j].mlp.down_proj.weight.any()
        # the copy still reads like its source
        assert torch.equal(layers[j].self_attn.q_proj.weight, layers[j - 1].self_attn.q_proj.weight)
    assert layers[1].self_attn.o_proj.weight.any()  # the source is untouched
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).logits, original(tokens).logits)
    again = DuplicationLog.from_json(log.to_json())
    assert again == log and log.to_json()["events"][0]["zeroed"] == [2, 5]
    assert [log.ancestor_of(j) for j in range(6)] == [0, 1, 1, 2, 3, 3]


def test_gpt2_copies_zero_c_proj_and_keep_logits():
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=50, n_embd=32, n_layer=4, n_head=2, n_positions=32)
    ).eval()
    original = copy.deepcopy(model)
    llama_pro(model, 2)
    tokens = torch.randint(0, 50, (1, 8))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).logits, original(tokens).logits)
    assert not model.transformer.h[2].attn.c_proj.bias.any()


def test_unknown_layout_is_refused():
    with pytest.raises(InputError, match="refusing to guess"):
        output_projection_names(["attn.wq.weight", "ffn.w3.weight"])
    with pytest.raises(InputError, match="unsupported modules"):
        output_projection_names(
            ["self_attn.o_proj.weight", "mlp.down_proj.weight", "mlp.experts.0.w2.weight"]
        )


def test_zeroed_outside_the_model_is_rejected():
    data = DuplicationLog(initial_depth=2).to_json()
    data["events"] = [
        {
            "step": 0,
            "operator": "llama-pro",
            "depth_before": 2,
            "depth_after": 3,
            "layer_map": [[[0, 1.0]], [[1, 1.0]], [[1, 1.0]]],
            "zeroed": [3],
        }
    ]
    with pytest.raises(LineageError, match="zeroed"):
        DuplicationLog.from_json(data)


def test_checkpoint_growth_of_a_zoo_model_keeps_logits(tmp_path):
    from lineage.ancestry import Lineage, head_ancestry

    log = grow_checkpoint("dense-s0", tmp_path / "pro", preset="llama-pro", every=4)
    event = log.events[-1]
    assert event.operator == "llama-pro" and event.zeroed == [4, 9]
    assert [p for [(p, _)] in event.layer_map] == [0, 1, 2, 3, 3, 4, 5, 6, 7, 7]
    from induction.models.registry import zoo_path

    ref = AutoModelForCausalLM.from_pretrained(str(zoo_path("dense-s0"))).eval()
    got = AutoModelForCausalLM.from_pretrained(str(tmp_path / "pro")).eval()
    assert got.config.num_hidden_layers == 10
    assert not got.model.layers[4].self_attn.o_proj.weight.any()
    assert not got.model.layers[9].mlp.down_proj.weight.any()
    tokens = torch.randint(4, 128, (2, 20))
    with torch.no_grad():
        torch.testing.assert_close(got(tokens).logits, ref(tokens).logits)
    # lineage: each copy's heads descend from its source layer's heads
    lin = Lineage.build(DuplicationLog.load(tmp_path / "pro"), n_heads=4, n_layers=10)
    anc = head_ancestry(lin)
    row = anc[(anc["layer"] == 4) & (anc["head"] == 2)].iloc[0]
    assert (row.ancestor_layer, row.ancestor_head, row.kinds) == (3, 2, "copy")
    assert anc[(anc.layer == 9)].ancestor_layer.unique().tolist() == [7]


def test_cli_grow_llama_pro(tmp_path):
    runner = CliRunner()
    out = tmp_path / "g"
    result = runner.invoke(
        app, ["grow", "dense-s0", "--preset", "llama-pro", "--every", "4", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "llama-pro (every 4)" in result.output and "[4, 9]" in result.output
    for args, fragment in (
        (["--preset", "llama-pro", "--every", "3"], "divide"),
        (["--preset", "llama-pro"], "needs --every"),
        (["--every", "2"], "--every goes with --preset llama-pro"),
    ):
        bad = runner.invoke(app, ["grow", "dense-s0", *args, "--out", str(tmp_path / "x")])
        assert bad.exit_code == 2 and fragment in bad.stderr, (bad.output, bad.stderr)
