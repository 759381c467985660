"""Ablation hooks and the batched engine against raw transformers on a tiny GQA Llama."""

import pytest
import torch

from ablation.engine import Engine, ResultCache, ablation_key, enable_kv_cache
from ablation.hooks import HeadAblation, ablate_heads, head_means, tie_heads
from ablation.results import EvalResult
from ablation.tasks import load_suite
from ablation.tasks.base import GenItem, GenTask


@pytest.fixture(scope="module")
def models(tiny_llama_dir):
    from transformers import LlamaForCausalLM

    from induction.models.loading import load_model

    loaded = load_model(str(tiny_llama_dir), device="cpu")
    raw = LlamaForCausalLM.from_pretrained(str(tiny_llama_dir)).eval()
    return loaded, raw


def _zero_o_proj_input(raw, heads, d_head):
    handles = []
    for layer in sorted({la for la, _ in heads}):
        idx = [h for la, h in heads if la == layer]

        def pre(mod, args, idx=idx):
            x = args[0].clone()
            for h in idx:
                x[..., h * d_head : (h + 1) * d_head] = 0
            return (x,)

        o_proj = raw.model.layers[layer].self_attn.o_proj
        handles.append(o_proj.register_forward_pre_hook(pre))
    return handles


def test_zero_ablation_equals_zeroing_o_proj_input_slice(models):
    loaded, raw = models
    info = loaded.info
    assert info.n_kv_heads < info.n_heads  # GQA: hook_z is per query head
    x = torch.randint(4, 128, (3, 17), generator=torch.Generator().manual_seed(0))
    heads = [(0, 1), (1, 0), (1, 3)]
    with torch.no_grad():
        clean = raw(x).logits
        handles = _zero_o_proj_input(raw, heads, info.d_head)
        try:
            ref = raw(x).logits
        finally:
            for h in handles:
                h.remove()
        with ablate_heads(loaded.bridge, heads):
            got = loaded.bridge(x)
            got_hf = loaded.hf_model(input_ids=x).logits  # any call path sees the hooks
        after = loaded.bridge(x)
    assert not torch.allclose(clean, ref)
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(got_hf, ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(after, clean, rtol=0, atol=1e-5)  # hooks removed on exit


def test_mean_ablation_writes_the_reference_mean(models):
    loaded, _ = models
    bridge = loaded.bridge
    ids = torch.randint(4, 128, (4, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0  # left padding excluded from the means
    means = head_means(bridge, [(ids, mask)], [0, 1], per_position=True)
    assert means.overall[1].shape == (loaded.info.n_heads, loaded.info.d_head)
    seen = {}

    def grab(z, hook):
        seen["z"] = z.clone()

    with ablate_heads(bridge, [(1, 2)], mode="mean", means=means):
        with bridge.hooks(fwd_hooks=[("blocks.1.attn.hook_z", grab)]):
            bridge(ids[1:])
    torch.testing.assert_close(seen["z"][:, :, 2], means.overall[1][2].expand(3, 9, -1))
    abl = HeadAblation([(1, 2)], "mean", means, mean_over="position")
    with bridge.hooks(fwd_hooks=abl.fwd_hooks() + [("blocks.1.attn.hook_z", grab)]):
        bridge(ids[1:])
    torch.testing.assert_close(seen["z"][0, 4, 2], means.per_position[1][4, 2])
    with pytest.raises(ValueError, match="out of range"):
        with ablate_heads(bridge, [(2, 0)]):
            pass


def test_tie_heads():
    unrolled = [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (3, 0)]
    assert tie_heads([(1, 2)], unrolled) == [(1, 2), (3, 2)]
    assert tie_heads([(4, 0), (0, 1)], unrolled) == [(0, 1), (2, 0), (4, 0)]


def _raw_greedy(raw, tok, task):
    outs = []
    for it in task.items:
        ids = torch.tensor([tok(it.prompt)["input_ids"]])
        g = raw.generate(ids, max_new_tokens=task.max_new_tokens, do_sample=False, pad_token_id=0)
        text = tok.decode(g[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
        cut = min([text.find(s) for s in task.stop if s in text] or [len(text)])
        outs.append(text[:cut].strip())
    return outs


def test_batched_engine_matches_per_example_generate(models):
    loaded, raw = models
    tok = loaded.tokenizer
    tasks = load_suite("zoo", tokenizer=tok, n_items=6, tasks=["lookup", "var_depth1", "copy"])
    engine = Engine(loaded.bridge, tok, batch_size=4)
    heads = [(0, 2), (1, 1)]
    padded = False
    for task in tasks:
        prep = engine.prepare(task)
        padded |= any(bool(m[:, 0].eq(0).any()) for _, _, m in prep.batches)
        clean = engine.evaluate(prep).predictions
        assert clean == _raw_greedy(raw, tok, task)
        ablated = engine.evaluate(prep, HeadAblation(heads)).predictions
        handles = _zero_o_proj_input(raw, heads, loaded.info.d_head)
        try:
            assert ablated == _raw_greedy(raw, tok, task)
        finally:
            for h in handles:
                h.remove()
    assert padded  # left padding was exercised


def test_kv_cache_patch_is_needed_and_idempotent(models):
    loaded, raw = models
    enable_kv_cache(loaded.bridge)
    enable_kv_cache(loaded.bridge)
    x = torch.randint(4, 128, (1, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = raw(x).logits[:, -1]
        out = loaded.hf_model(input_ids=x[:, :11], use_cache=True)
        assert out.past_key_values.get_seq_length() == 11
        step = loaded.hf_model(
            input_ids=x[:, 11:],
            past_key_values=out.past_key_values,
            use_cache=True,
            attention_mask=torch.ones(1, 12, dtype=torch.long),
            position_ids=torch.tensor([[11]]),
        ).logits[:, -1]
    torch.testing.assert_close(step, ref, rtol=0, atol=1e-5)


def test_stop_strings_and_dist_tasks(models):
    loaded, _ = models
    tok = loaded.tokenizer
    engine = Engine(loaded.bridge, tok, batch_size=2)
    task = GenTask(
        "t", [GenItem("w1 w2 w3", ["w4"]), GenItem("a = 3 ;", ["3"])], stop=["w5"], max_new_tokens=6
    )
    res = engine.evaluate(engine.prepare(task))
    assert all("w5" not in p for p in res.predictions)
    (rb,) = load_suite("regbench", tokenizer=tok, bos_id=1, n_items=3, max_tokens=60)
    out = engine.evaluate(engine.prepare(rb))
    assert 0 <= out.scores["tvd"] <= 1 and 0 <= out.scores["acc"] <= 1
    assert len(out.items["tvd"]) == 3


def test_result_cache_resumes_and_ignores_torn_lines(tmp_path):
    path = tmp_path / "c.jsonl"
    c = ResultCache(path)
    result = EvalResult({"f1": 0.5}, {"f1": [0.0, 1.0]}, predictions=["a", "b"], heads="1.0")
    c.put(c.key("fp", ablation_key([(1, 0)], "zero", "all")), result)
    with open(path, "a") as fh:
        fh.write('{"key": "fp|torn", "res')  # a crash mid-write
    again = ResultCache(path)
    assert again.get("fp|zero:1.0") == result
    assert again.get("fp|torn") is None
    assert ablation_key([], "zero", "all") == "clean"
    assert ablation_key([(0, 1)], "mean", "position") == "mean:position:0.1"
