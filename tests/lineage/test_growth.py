"""Growth operators: exact function preservation, config consistency, save/reload."""

import copy

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from induction.errors import InputError
from induction.models.layers import decoder_layers
from lineage.growth import duplicate_layers, grow, lidas_span, midas_span
from lineage.log import DuplicationLog


def tiny_llama(n_layers=4, seed=0):
    torch.manual_seed(seed)
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


def run_layers_by_hand(model, order, tokens):
    """Forward pass that runs the given layer indices in order (independent of the grown model)."""
    inner = model.model
    h = inner.embed_tokens(tokens)
    pos = torch.arange(tokens.shape[1])[None]
    cos_sin = inner.rotary_emb(h, pos)
    mask = torch.full((tokens.shape[1],) * 2, float("-inf")).triu(1)[None, None]
    for i in order:
        out = inner.layers[i](h, attention_mask=mask, position_embeddings=cos_sin, position_ids=pos)
        h = out[0] if isinstance(out, tuple) else out
    return model.lm_head(inner.norm(h))


def test_presets_match_research_md():
    assert lidas_span(8, 4) == ((2, 6), 4)  # abcd|efgh -> abcd cdef efgh
    assert lidas_span(2, 2) == ((0, 2), 1)
    assert midas_span(8, 4) == ((0, 4), 4)
    assert midas_span(12, 4) == ((4, 8), 8)
    with pytest.raises(InputError):
        lidas_span(4, 3)


@pytest.mark.parametrize("source,insert_at", [((1, 3), 3), ((0, 2), 1), ((3, 4), 0)])
def test_grown_logits_equal_running_copied_layers_twice(source, insert_at):
    model = tiny_llama()
    original = copy.deepcopy(model)
    tokens = torch.randint(0, 64, (2, 12))
    event, _ = duplicate_layers(model, source, insert_at)
    order = list(range(insert_at)) + list(range(*source)) + list(range(insert_at, 4))
    with torch.no_grad():
        expected = run_layers_by_hand(original, order, tokens)
        got = model(tokens).logits
    assert torch.equal(got, expected)
    assert model.config.num_hidden_layers == len(decoder_layers(model)) == 4 + source[1] - source[0]
    assert [layer.self_attn.layer_idx for layer in decoder_layers(model)] == list(range(len(order)))
    assert all(layer.self_attn.config is model.config for layer in decoder_layers(model))
    assert [p for [(p, _)] in event.layer_map] == order


def test_copies_are_independent_parameters():
    model = tiny_llama()
    duplicate_layers(model, (1, 2), 2)
    layers = decoder_layers(model)
    assert torch.equal(layers[1].mlp.up_proj.weight, layers[2].mlp.up_proj.weight)
    assert layers[1].mlp.up_proj.weight.data_ptr() != layers[2].mlp.up_proj.weight.data_ptr()


def test_save_and_reload_gives_identical_logits(tmp_path):
    model = tiny_llama()
    log = DuplicationLog(initial_depth=4)
    grow(model, "lidas", block=2, log=log, step=10)
    model.save_pretrained(tmp_path)
    log.save(tmp_path / "duplication_log.json")
    reloaded = LlamaForCausalLM.from_pretrained(tmp_path).eval()
    tokens = torch.randint(0, 64, (2, 9))
    with torch.no_grad():
        assert torch.equal(model(tokens).logits, reloaded(tokens).logits)
    DuplicationLog.load(tmp_path).check_depth(reloaded.config.num_hidden_layers)


def test_gpt2_growth_keeps_config_consistent():
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=50, n_embd=32, n_layer=4, n_head=2, n_positions=32)
    ).eval()
    duplicate_layers(model, (1, 3), 3)
    assert model.config.n_layer == 6 == len(model.transformer.h)
    with torch.no_grad():
        model(torch.randint(0, 50, (1, 8)))


def test_optimizer_state_reset_or_copied():
    for mode in ("reset", "copy"):
        model = tiny_llama()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(torch.randint(0, 64, (2, 8)), labels=torch.randint(0, 64, (2, 8))).loss.backward()
        opt.step()
        _, new_opt = duplicate_layers(model, (1, 2), 2, optimizer=opt, optimizer_state=mode)
        copy_param = decoder_layers(model)[2].mlp.up_proj.weight
        src_param = decoder_layers(model)[1].mlp.up_proj.weight
        assert len(new_opt.param_groups[0]["params"]) == len(list(model.parameters()))
        if mode == "reset":
            assert copy_param not in new_opt.state
        else:
            assert torch.equal(
                new_opt.state[copy_param]["exp_avg"], new_opt.state[src_param]["exp_avg"]
            )


def test_bad_spans_are_rejected():
    model = tiny_llama()
    with pytest.raises(InputError, match="source span"):
        duplicate_layers(model, (2, 9), 0)
    with pytest.raises(InputError, match="insert_at"):
        duplicate_layers(model, (0, 1), 7)


def test_top_growth_stacks_copies_of_the_top_layer():
    from lineage.growth import top_span

    assert top_span(4) == ((3, 4), 4)
    log = DuplicationLog(initial_depth=4)
    for depth in range(4, 8):
        log.record_copy(0, "top", *top_span(depth))
    assert [log.ancestor_of(i) for i in range(8)] == [0, 1, 2, 3, 3, 3, 3, 3]
    with pytest.raises(InputError):
        top_span(2, 3)
