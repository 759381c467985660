"""Lineage inferred from weights agrees with the real duplication log, also after simulated
training drift; independent layers stay apart."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from lineage.ancestry import Lineage
from lineage.growth import duplicate_layers, grow
from lineage.infer import compare_with_log, infer_lineage
from lineage.log import DuplicationLog


def grown_model(n_kv: int = 4, seed: int = 0, drift: float = 0.3):
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv,
    )
    model = LlamaForCausalLM(cfg)
    log = DuplicationLog(initial_depth=2)
    for block, step in ((2, 100), (4, 200)):
        add_noise(model, drift)
        grow(model, "lidas", block=block, log=log, step=step)
    add_noise(model, drift)
    return model, log


def add_noise(model, scale: float):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * p.std() * scale)


@pytest.mark.parametrize("extra_drift", [0.0, 0.5, 1.0, 2.0])
def test_agrees_with_the_log_under_drift(extra_drift):
    model, log = grown_model()
    add_noise(model, extra_drift)  # independent noise on every copy: training drift
    result = infer_lineage(model)
    agree = compare_with_log(result, log)
    assert agree["partition_equal"] and agree["layer_agreement"] == 1.0, agree
    assert result.families == [0, 0, 0, 0, 1, 1, 1, 1]
    assert min(result.confidence) > 0.5
    table = result.table()
    assert list(table["family"]) == result.families
    assert (table["head_match"] == 1.0).all()  # head j of a copy matches head j
    assert all(result.families[m] == result.families[i] for i, m in enumerate(result.matches))


def test_grouped_query_attention_and_checkpoint_folder(grown_dir):
    model, log = grown_model(n_kv=2, seed=1)
    assert compare_with_log(infer_lineage(model), log)["partition_equal"]
    on_disk = DuplicationLog.load(grown_dir / "duplication_log.json")
    result = infer_lineage(grown_dir)
    assert compare_with_log(result, on_disk)["partition_equal"]


def test_unrelated_layers_stay_apart():
    torch.manual_seed(3)
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=6,
        num_attention_heads=4,
    )  # fmt: skip
    model = LlamaForCausalLM(cfg)
    result = infer_lineage(model)
    assert result.families == list(range(6))
    assert min(result.confidence) > 0.5


def test_irregular_copies_and_log_round_trip():
    torch.manual_seed(4)
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4,
    )  # fmt: skip
    model = LlamaForCausalLM(cfg)
    log = DuplicationLog(initial_depth=3)
    duplicate_layers(model, (2, 3), 0, log=log, step=1)  # c a b c
    duplicate_layers(model, (1, 3), 4, log=log, step=2)  # c a b c a b
    add_noise(model, 0.8)
    result = infer_lineage(model)
    agree = compare_with_log(result, log)
    assert agree["partition_equal"], agree
    assert result.families == [0, 1, 2, 0, 1, 2]  # numbered by first layer, not by origin
    assert agree["pair_agreement"] == 1.0
    inferred = result.to_log()
    assert inferred.events[0].operator == "inferred"
    lin = Lineage.build(inferred, n_heads=4, n_layers=6)
    assert lin.layer_ancestors(3) == {0: 1.0}


def test_head_similarity_respects_head_index():
    model, _ = grown_model()
    permuted = copy.deepcopy(model)
    layer = permuted.model.layers[7].self_attn
    perm = [1, 0, 3, 2]
    with torch.no_grad():
        for proj in (layer.q_proj, layer.k_proj, layer.v_proj):
            w = proj.weight.view(4, 16, 64)
            proj.weight.copy_(w[perm].reshape(64, 64))
        o = layer.o_proj.weight.view(64, 4, 16)
        layer.o_proj.weight.copy_(o[:, perm].reshape(64, 64))
    table = infer_lineage(permuted).table()
    assert table.loc[7, "head_match"] == 0.0  # permuted heads no longer match by index


def zoo_grown() -> list[str]:
    from induction.models import registry

    return [n for n in registry.zoo_models() if n.startswith("grown-")]


@pytest.mark.skipif(not zoo_grown(), reason="no grown zoo models shipped yet")
@pytest.mark.parametrize("name", zoo_grown() or ["none"])
def test_agrees_with_the_log_of_trained_zoo_models(name):
    from induction.models import registry

    folder = registry.zoo_path(name)
    log = DuplicationLog.load(folder / "duplication_log.json")
    result = infer_lineage(folder)
    agree = compare_with_log(result, log)
    assert agree["partition_equal"], (agree, result.confidence, result.similarity.round(2))
