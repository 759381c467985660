"""The patching paths on every architecture family users bring (issue #45 item 1; docs/specs.md,
"Architectures"), each against a recomputation from transformers' own modules written in the
test (conftest ``PlainArch``): a head's zero ablation, the circuits total and key-path drops,
FV patching, and each path's null baseline (patching nothing changes nothing). Plus the
mid-stack shortcut on decoders with mixed sliding/global layers (the Gemma key-path offset)."""

from __future__ import annotations

import warnings

import pytest
import torch

from induction.circuits import patching
from induction.circuits.effects import ablate_each_head, setup
from induction.circuits.finder import find_circuits
from induction.circuits.fv import Batch, cie_batched, mean_activations
from induction.circuits.patching import Replacement, clean_pass, run_rows
from induction.models.loading import load_model

FAMILIES = ["llama", "gemma2", "gemma3", "qwen2", "qwen3", "mistral", "gpt2", "gpt_neox", "phi"]
MIXED = ["gemma2", "gemma3", "qwen2"]  # sliding and global layers in one stack
SEQ_LEN, BATCH = 8, 3
TOL = 2e-5  # scores, losses and probabilities
LOGIT_TOL = 2e-4  # logits (tens in size at this init)


@pytest.fixture(scope="module")
def arch(tiny_arch_dirs, plain_arch):
    """``family -> (loaded model, plain eager HF model, circuits Setup)``, once per module."""
    cache: dict = {}

    def get(family: str):
        if family not in cache:
            folder = tiny_arch_dirs(family)
            loaded = load_model(str(folder))
            s = setup(loaded, seq_len=SEQ_LEN, batch=BATCH)
            cache[family] = (loaded, plain_arch.load(folder), s)
        return cache[family]

    return get


def _plain_logits(hf, tokens):
    with torch.no_grad():
        return hf(input_ids=tokens).logits


def _nll(logits, s):
    lp = logits.index_select(1, s.logits_at).log_softmax(-1)
    return -lp.gather(-1, s.targets.unsqueeze(-1)).squeeze(-1).mean(-1)


@pytest.mark.parametrize("family", MIXED)
def test_shortcut_keeps_each_layers_attention_type(arch, family):
    """Running layer 1 from the residual gives the full pass's logits on a stack whose layer 0
    is sliding and layer 1 global: the shortcut used to run layer 1 with layer 0's mask and
    RoPE base (the constant key-path drop on Gemma 3), and the check now finds it exact."""
    loaded, hf, s = arch(family)
    v = patching.view(loaded)
    clean = clean_pass(v, s.tokens)
    got = run_rows(v, s.tokens, start=1, resid=clean.resid[1], logits_at=s.logits_at)
    want = _plain_logits(hf, s.tokens).index_select(1, s.logits_at)
    assert v.exact_from[1], "the shortcut fell back to full passes"
    torch.testing.assert_close(got, want, atol=LOGIT_TOL, rtol=1e-4)


def test_shortcut_guard_falls_back_where_it_differs(arch, monkeypatch):
    """Without slicing the per-layer config (the old shortcut) the check sees the difference,
    warns, and the pass runs from the tokens: same logits as the plain model."""
    loaded, hf, s = arch("gemma3")
    monkeypatch.setattr(patching, "PER_LAYER_CONFIG", ())
    v = patching.view(loaded)
    clean = clean_pass(v, s.tokens)
    with pytest.warns(UserWarning, match="full passes"):
        got = run_rows(v, s.tokens, start=1, resid=clean.resid[1], logits_at=s.logits_at)
    assert not v.exact_from[1]
    want = _plain_logits(hf, s.tokens).index_select(1, s.logits_at)
    torch.testing.assert_close(got, want, atol=LOGIT_TOL, rtol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_zero_ablation_matches_plain(arch, plain_arch, family):
    """A head's zero ablation (``ablate``'s hooks and the batched effects pass) equals zeroing
    its slice of the output projection's input; the effects pass's rows with nothing ablated
    give the clean loss (null baseline)."""
    from ablation.hooks import ablate_heads

    loaded, hf, s = arch(family)
    d_head = int(loaded.bridge.cfg.d_head)
    heads = [(0, 1), (1, 2)]
    v = s.v
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: the shortcut is exact on every family
        clean = clean_pass(v, s.tokens, s.logits_at, s.targets)
        null = torch.empty(len(heads), BATCH)
        batched = ablate_each_head(s, heads, Replacement("zero"), clean, null=null)
    for i, (layer, head) in enumerate(heads):
        with plain_arch.zero_head(hf, layer, head, d_head):
            want = _plain_logits(hf, s.tokens)
        with torch.no_grad(), ablate_heads(loaded.bridge, [(layer, head)], mode="zero"):
            got = loaded.bridge(s.tokens, return_type="logits")
        torch.testing.assert_close(got, want, atol=LOGIT_TOL, rtol=1e-4)
        torch.testing.assert_close(batched[i], _nll(want, s), atol=TOL, rtol=1e-4)
    torch.testing.assert_close(clean.loss, _nll(_plain_logits(hf, s.tokens), s), atol=TOL, rtol=0)
    # null baseline: the rows of each pass where nothing is ablated give the clean loss
    torch.testing.assert_close(null, clean.loss[None].expand_as(null), atol=TOL, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_circuits_drops_match_plain(arch, plain_arch, family):
    """``find_circuits``' total and key-path drops of every (layer-1 head, layer-0 head) pair
    equal the stripe score recomputed from eager attention patterns with the layer-0 head's
    output zeroed (total) or subtracted from layer 1's key input only (key path); both null
    columns are 0."""
    loaded, hf, s = arch(family)
    d_head = int(loaded.bridge.cfg.d_head)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = find_circuits(loaded, top=8, seq_len=SEQ_LEN, batch=BATCH, seeds=1)
    df = result.table
    assert result.key_path and len(df) == 16  # 4 induction heads (layer 1) x 4 partners
    copy_start = s.prompts.layout.copy_start(1)

    def stripe(layer):
        return plain_arch.stripe(plain_arch.patterns(hf, s.tokens)[layer], copy_start, SEQ_LEN)

    clean = stripe(1)  # [batch, head]
    z0 = plain_arch.head_outputs(hf, s.tokens, d_head)[0]  # [batch, pos, head, d_head]
    w_o = plain_arch.o_weight(plain_arch.layers(hf)[0])  # [d_model, heads * d_head]
    for ha in range(4):
        with plain_arch.zero_head(hf, 0, ha, d_head):
            total = stripe(1)
        delta = z0[:, :, ha] @ w_o[:, ha * d_head : (ha + 1) * d_head].T.detach()
        with plain_arch.key_input_minus(hf, 1, delta):
            keyed = stripe(1)
        for hb in range(4):
            row = df[(df.partner == f"L0H{ha}") & (df.induction_head == f"L1H{hb}")].iloc[0]
            assert row["clean_score"] == pytest.approx(float(clean[:, hb].mean()), abs=TOL)
            assert row["drop"] == pytest.approx(float((clean - total)[:, hb].mean()), abs=TOL)
            assert row["drop_key"] == pytest.approx(float((clean - keyed)[:, hb].mean()), abs=TOL)
    assert df.drop_null.abs().max() < TOL and df.drop_key_null.abs().max() < TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_fv_patch_matches_plain(arch, plain_arch, family):
    """FV patching (prefix KV cache, many heads per pass) equals writing the head's clean mean
    into its slice of the output projection's input at the last position; the null CIE is 0."""
    loaded, hf, s = arch(family)
    d_head = int(loaded.bridge.cfg.d_head)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(4, 100, (2, 2, 9), generator=gen)
    ones = torch.ones(2, 9, dtype=torch.long)
    answer = torch.tensor([5, 7])
    clean, corrupted = Batch(ids[0], ones, answer), Batch(ids[1], ones, answer)
    means = mean_activations(loaded, clean)  # [layer, head, d_head]
    plain_means = {la: z[:, -1].mean(0) for la, z in
                   plain_arch.head_outputs(hf, clean.ids, d_head).items()}  # fmt: skip
    for la in plain_means:
        torch.testing.assert_close(means[la], plain_means[la], atol=TOL, rtol=1e-4)
    heads = [(0, 0), (0, 3), (1, 1), (1, 2)]
    null: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = cie_batched(loaded, corrupted, means, heads, max_rows=4, null=null)

    def prob(logits):
        return logits[:, -1].softmax(-1).gather(1, answer[:, None])[:, 0]

    base = prob(_plain_logits(hf, corrupted.ids))
    for j, (la, h) in enumerate(heads):

        def put(mod, args, la=la, h=h):
            x = args[0].clone()
            x[:, -1, h * d_head : (h + 1) * d_head] = plain_means[la][h]
            return (x, *args[1:])

        proj = plain_arch.out_proj(plain_arch.layers(hf)[la])
        handle = proj.register_forward_pre_hook(put)
        try:
            want = (prob(_plain_logits(hf, corrupted.ids)) - base).mean()
        finally:
            handle.remove()
        assert float(got[j]) == pytest.approx(float(want), abs=1e-6)
    assert abs(null[0]) < 1e-6
