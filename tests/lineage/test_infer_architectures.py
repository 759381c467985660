"""Lineage ``--infer`` on every architecture family users bring (issue #45 item 1;
docs/specs.md, "Architectures"): per family, a 3-layer model whose layer 2 is a drifted copy
of layer 0 is grouped [0, 1, 0] by head weights (not the whole-layer fallback), and the
layer similarity equals a recomputation from the modules' own Q, K, V, O weights."""

from __future__ import annotations

import pytest
import torch

from lineage.infer import infer_lineage

FAMILIES = ["llama", "gemma2", "gemma3", "qwen2", "qwen3", "mistral", "gpt2", "gpt_neox", "phi"]
MIXED3 = {
    "num_hidden_layers": 3,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
}
THREE = {"gemma2": MIXED3, "gemma3": MIXED3, "qwen2": MIXED3, "gpt2": {"n_layer": 3}}  # fmt: skip


def _per_head(attn, n_heads: int, n_kv: int) -> torch.Tensor:
    """``[head, part (q, k, v, o), features]``: each query head's weights, unit length;
    shared key/value heads repeated for every query head of their group."""
    if hasattr(attn, "c_attn"):  # GPT-2 Conv1D: [d_in, 3 d_out]
        q, k, v = attn.c_attn.weight.T.chunk(3)
        o = attn.c_proj.weight.T
    elif hasattr(attn, "query_key_value"):  # GPT-NeoX: per head [q, k, v] rows
        w = attn.query_key_value.weight
        q, k, v = (w.view(n_heads, 3, -1, w.shape[-1])[:, i].flatten(0, 1) for i in range(3))
        o = attn.dense.weight
    else:
        q, k, v = attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight
        o = getattr(attn, "o_proj", None) or attn.dense
        o = o.weight
    d_head = q.shape[0] // n_heads
    group = n_heads // n_kv
    parts = [
        q.reshape(n_heads, -1),
        k.reshape(n_kv, -1).repeat_interleave(group, 0),
        v.reshape(n_kv, -1).repeat_interleave(group, 0),
        o.reshape(o.shape[0], n_heads, d_head).transpose(0, 1).reshape(n_heads, -1),
    ]
    parts = [p / p.norm(dim=-1, keepdim=True) for p in parts]
    width = max(p.shape[-1] for p in parts)
    return torch.stack([torch.nn.functional.pad(p, (0, width - p.shape[-1])) for p in parts], 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_infer_finds_the_copied_layer(tmp_path, tiny_arch_factory, plain_arch, family):
    changes = THREE.get(family, {"num_hidden_layers": 3})
    folder = tiny_arch_factory(tmp_path / "src", family, **changes)
    hf = plain_arch.load(folder)
    layers = plain_arch.layers(hf)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p2, p0 in zip(layers[2].parameters(), layers[0].parameters(), strict=True):
            noise = torch.randn(p0.shape, generator=gen) * p0.std().nan_to_num(0) * 0.3
            p2.copy_(p0 + noise)  # layer 2: layer 0 after some training drift
    hf.save_pretrained(str(tmp_path / "grown"))
    result = infer_lineage(tmp_path / "grown")
    assert result.mode == "heads"
    assert result.families == [0, 1, 0]
    cfg = hf.config
    n_heads = cfg.num_attention_heads
    n_kv = getattr(cfg, "num_key_value_heads", None) or n_heads
    with torch.no_grad():
        x = torch.stack([_per_head(plain_arch.attn(b), n_heads, n_kv) for b in layers])
    want = torch.einsum("lhpf,mhpf->lmh", x, x).mean(-1) / 4  # mean over heads and parts
    torch.testing.assert_close(torch.as_tensor(result.similarity), want, atol=1e-5, rtol=0)
