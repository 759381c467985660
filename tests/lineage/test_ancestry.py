"""Per-head ancestry against independent computations: layers tagged by their weights and
grown with the real operator, a list replay of the span events, and brute-force path sums."""

from __future__ import annotations

import itertools
import random

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from induction.errors import LineageError
from induction.models.layers import decoder_layers
from induction.models.looped import LoopPlan
from lineage.ancestry import Lineage, head_ancestry
from lineage.growth import duplicate_layers
from lineage.log import DuplicationLog

N_HEADS = 4


def tagged_model(n_layers: int):
    cfg = LlamaConfig(
        vocab_size=16,
        hidden_size=16,
        intermediate_size=16,
        num_hidden_layers=n_layers,
        num_attention_heads=N_HEADS,
        num_key_value_heads=N_HEADS,
    )
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for i, layer in enumerate(decoder_layers(model)):
            layer.input_layernorm.weight.fill_(float(i))
            # head h of layer i carries tag 100 * i + h in its query rows
            q = layer.self_attn.q_proj.weight.view(N_HEADS, -1, 16)
            for h in range(N_HEADS):
                q[h].fill_(100.0 * i + h)
    return model


def read_tags(model) -> list[list[tuple[int, int]]]:
    out = []
    for layer in decoder_layers(model):
        q = layer.self_attn.q_proj.weight.view(N_HEADS, -1, 16)
        tags = [int(q[h, 0, 0].item()) for h in range(N_HEADS)]
        out.append([(t // 100, t % 100) for t in tags])
    return out


def replay(log: DuplicationLog, to_stage: int = 0) -> list[int]:
    """Ancestor layer at ``to_stage`` of every final layer, replaying source/insert_at only."""
    labels = list(range(log.depths()[to_stage]))
    for e in log.events[to_stage:]:
        a, b = e.source
        labels = labels[: e.insert_at] + labels[a:b] + labels[e.insert_at :]
    return labels


@pytest.mark.parametrize("seed", range(4))
def test_heads_match_tags_of_a_really_grown_model(seed):
    rng = random.Random(seed)
    depth = rng.randint(1, 3)
    model = tagged_model(depth)
    log = DuplicationLog(initial_depth=depth)
    for step in range(3):
        a = rng.randrange(depth)
        b = rng.randint(a + 1, depth)
        insert_at = rng.randint(0, depth)
        duplicate_layers(model, (a, b), insert_at, log=log, step=10 * step)
        depth += b - a
    tags = read_tags(model)
    df = head_ancestry(log, N_HEADS, n_layers=depth)
    assert len(df) == depth * N_HEADS  # copy-only: one ancestor per head
    for r in df.itertuples():
        assert (r.ancestor_layer, r.ancestor_head) == tags[r.layer][r.head]
        assert r.weight == 1.0 and r.n_paths == 1 and r.primary
    assert list(df.groupby("layer")["ancestor_layer"].first()) == replay(log)


def test_lidas_chain_paths_kinds_and_steps():
    log = DuplicationLog(initial_depth=2)
    log.record_copy(100, "lidas", (0, 2), 1)  # a [a b] b
    log.record_copy(200, "lidas", (0, 4), 2)  # a a [a a b b] b b
    df = head_ancestry(log, 2)
    first = df[df["head"] == 1].set_index("layer")
    assert list(first["ancestor_layer"]) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert list(first["path"]) == [
        "0>0>0",
        "0>1>1",
        "0>0>2",
        "0>1>3",
        "1>2>4",
        "1>3>5",
        "1>2>6",
        "1>3>7",
    ]
    assert first.loc[3, "kinds"] == "copy>copy" and first.loc[3, "born_step"] == 200
    assert first.loc[1, "kinds"] == "copy>keep" and first.loc[1, "born_step"] == 100
    assert first.loc[0, "copies"] == 0 and first["born_step"].isna()[0]
    assert set(df["ancestor_head"] == df["head"]) == {True}


def test_intermediate_stage_ancestors_match_replay():
    log = DuplicationLog(initial_depth=2)
    log.record_copy(1, "lidas", (0, 2), 1)
    log.record_copy(2, "lidas", (0, 4), 2)
    log.record_copy(3, "midas", (4, 8), 8)
    for to_stage in range(4):
        df = head_ancestry(log, 1, to_stage=to_stage)
        assert list(df["ancestor_layer"]) == replay(log, to_stage)
        assert set(df["ancestor_stage"]) == {to_stage}


def brute_force(log: DuplicationLog, layer: int) -> tuple[dict[int, float], dict[int, int]]:
    """Enumerate every path explicitly (exponential; fine for tiny logs)."""
    weights: dict[int, float] = {}
    counts: dict[int, int] = {}

    def walk(stage, node, w):
        if stage == 0:
            weights[node] = weights.get(node, 0.0) + w
            counts[node] = counts.get(node, 0) + 1
            return
        for parent, pw in log.events[stage - 1].layer_map[node]:
            walk(stage - 1, parent, w * pw)

    walk(len(log.events), layer, 1.0)
    return weights, counts


def test_weighted_mixes_match_path_enumeration():
    log = DuplicationLog(initial_depth=3)
    log.record_mix(1, [[(0, 1.0)], [(0, 0.5), (1, 0.5)], [(1, 0.3), (2, 0.7)], [(2, 1.0)]])
    log.record_copy(2, "copy", (1, 3), 2)
    log.record_mix(3, [[(i, 0.6), (i + 1, 0.4)] for i in range(5)])
    df = head_ancestry(log, 2)
    lin = Lineage.build(log, n_heads=2)
    for layer in range(log.final_depth):
        weights, counts = brute_force(log, layer)
        got = df[(df["layer"] == layer) & (df["head"] == 1)].set_index("ancestor_layer")
        assert set(got.index) == set(weights)
        for anc, w in weights.items():
            assert got.loc[anc, "weight"] == pytest.approx(w)
            assert got.loc[anc, "n_paths"] == counts[anc]
        assert got["share"].sum() == pytest.approx(1.0)
        assert lin.layer_ancestors(layer) == pytest.approx(log.ancestors(layer))
        # the primary ancestor has the largest weight
        assert got["weight"].idxmax() == got.index[got["primary"]][0]
    assert "mix" in set(df["kinds"].str.split(">").explode())


def test_looped_passes_map_to_block_layers():
    plan = LoopPlan(block=2, loops=3, prelude=1, coda=1)
    df = head_ancestry(None, N_HEADS, loop_plan=plan, n_layers=plan.unrolled_depth)
    one = df[df["head"] == 2].set_index("layer")
    assert list(one["ancestor_layer"]) == plan.stored_index
    assert list(one["pass"]) == [0, 0, 0, 1, 1, 2, 2, 0]
    assert list(one["block_layer"]) == [s for s, _ in plan.unrolled_layers]
    assert list(one["kinds"]) == ["keep", "keep", "keep", "loop", "loop", "loop", "loop", "keep"]


def test_grown_then_looped_composes():
    log = DuplicationLog(initial_depth=1)
    log.record_copy(5, "copy", (0, 1), 1)  # 2 stored layers, both from layer 0
    plan = LoopPlan(block=2, loops=2)
    lin = Lineage.build(log, loop_plan=plan, n_heads=1, n_layers=4)
    assert lin.depths == (1, 2, 4)
    assert [lin.layer_ancestors(i) for i in range(4)] == [{0: 1.0}] * 4
    assert [lin.layer_ancestors(i, to_stage=1) for i in range(4)] == [{0: 1.0}, {1: 1.0}] * 2


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"n_layers": 9}, "ends at 8 layers but the model has 9"),
        ({"n_heads": 0}, "n_heads"),
        ({"to_stage": 3}, "outside the lineage's stages"),
    ],
)
def test_bad_requests_are_one_line_errors(kwargs, message):
    log = DuplicationLog(initial_depth=2)
    log.record_copy(1, "lidas", (0, 2), 1)
    log.record_copy(2, "lidas", (0, 4), 2)
    args = {"n_heads": 2, **kwargs}
    with pytest.raises(LineageError, match=message) as err:
        head_ancestry(log, **args)
    assert "\n" not in str(err.value)


def zoo_grown() -> list[str]:
    from induction.models import registry

    return [n for n in registry.zoo_models() if n.startswith("grown-")]


@pytest.mark.skipif(not zoo_grown(), reason="no grown zoo models shipped yet")
@pytest.mark.parametrize("name", zoo_grown() or ["none"])
def test_zoo_grown_ancestry_matches_replay_of_its_log(name):
    import json

    from induction.models import registry
    from lineage.graph import lineage_graph, roots_of

    folder = registry.zoo_path(name)
    log = DuplicationLog.load(folder / "duplication_log.json")
    n_heads = json.loads((folder / "config.json").read_text())["num_attention_heads"]
    df = head_ancestry(log, n_heads)
    expected = replay(log)
    for r in df.itertuples():
        assert (r.ancestor_layer, r.ancestor_head) == (expected[r.layer], r.head)
    g = lineage_graph(log, n_heads)
    for r in df.itertuples():
        node = f"s{len(log.events)}:L{r.layer}H{r.head}"
        assert roots_of(g, node) == {f"s0:L{r.ancestor_layer}H{r.ancestor_head}": 1.0}


def test_every_pair_of_stages_is_consistent():
    """Ancestry composes: tracing final -> k -> 0 equals tracing final -> 0."""
    log = DuplicationLog(initial_depth=2)
    log.record_copy(1, "lidas", (0, 2), 1)
    log.record_mix(2, [[(0, 1.0)], [(1, 0.5), (2, 0.5)], [(2, 1.0)], [(3, 1.0)], [(1, 1.0)]])
    log.record_copy(3, "copy", (1, 4), 5)
    lin = Lineage.build(log, n_heads=1)
    for k, layer in itertools.product(range(4), range(lin.final_depth)):
        via: dict[int, float] = {}
        for mid, w in lin.layer_ancestors(layer, to_stage=k).items():
            for anc, w2 in lin.layer_ancestors(mid, stage=k).items():
                via[anc] = via.get(anc, 0.0) + w * w2
        assert via == pytest.approx(lin.layer_ancestors(layer))
