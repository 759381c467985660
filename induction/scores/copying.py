"""Olsson et al.'s copying score: does a head's OV circuit raise the token it attends to?

Weights only (no prompts): the direct path of each head's OV circuit, for a set of tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from induction.errors import InputError
from induction.models.target import check_layers, eos_token_id, module_device, resolve_target
from induction.scores.score_names import DEFAULT_COPYING_TOKENS

if TYPE_CHECKING:
    from jaxtyping import Float, Int
    from torch import Tensor


def copying_scores(
    model: Any,
    *,
    layers: Sequence[int] | None = None,
    token_ids: Int[Tensor, " token"] | None = None,
    max_tokens: int = DEFAULT_COPYING_TOKENS,
    seed: int = 0,
    progress: Any = None,
) -> Float[Tensor, "layer head"]:
    """Olsson et al.'s copying score per head from the weights alone: ``[layers, heads]``.

    Direct path of each head's OV circuit, token ``s`` attended to -> logits: the embedding
    ``W_E[s]`` through the layer's input norm, ``W_V`` and ``W_O`` of the head, the final
    norm's per-channel gain, and ``W_U`` (biases and the rest of the residual stream are left
    out; a per-row scale does not matter below). With ``z_s`` the logits over the token set
    minus their mean, the head's score for ``s`` is ``relu(z_s[s]) / max relu(z_s)`` when the
    attended token is raised and ``-relu(-z_s[s]) / max relu(-z_s)`` when it is lowered; the
    score is the mean over ``s``, in [-1, 1]. 1: every attended token gets the largest boost
    (a perfect copier); -1: the largest cut (copy suppression); near 0: unrelated. Tokens:
    ``token_ids`` (default the model's ordinary range), a seeded sample of ``max_tokens`` of
    them when there are more; logits are taken over the same set. Computed in float32.

    ``model``: a LoadedModel, a TransformerBridge or a :class:`induction.models.target.ScanTarget`;
    ``progress``: an :class:`induction.progress.Progress` (one step per layer) or None.
    """
    target = resolve_target(model, "copying_scores")
    bridge = target.bridge
    layer_list = check_layers(layers, int(target.info.n_layers))
    if token_ids is None:
        from induction.scores.prompts import token_pool

        token_ids = token_pool(target.info, eos_token_id=eos_token_id(bridge)).ids
    token_ids = torch.as_tensor(token_ids, dtype=torch.long).flatten()
    if token_ids.numel() > max_tokens:
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        keep = torch.randperm(token_ids.numel(), generator=gen)[:max_tokens]
        token_ids = token_ids[keep.sort().values]
    n_heads = int(bridge.cfg.n_heads)
    result = torch.zeros(len(layer_list), n_heads)
    advance = progress.task(len(layer_list), "copying scores") if progress else (lambda: None)
    with torch.no_grad():
        W_E = bridge.W_E
        W_U = bridge.W_U
        ids_e = token_ids.to(W_E.device)
        emb = W_E.index_select(0, ids_e)  # [S, d] in the model's dtype
        U = W_U.index_select(1, token_ids.to(W_U.device)).float()  # [d, S]
        gain = norm_gain(getattr(bridge, "ln_final", None), W_U.shape[0], W_U)
        if gain is not None:
            U = gain.float().to(U.device).unsqueeze(1) * U
        for slot, layer in enumerate(layer_list):
            result[slot] = _layer_copying(bridge.blocks[layer], emb, U, n_heads).cpu()
            advance()
    return result


def _layer_copying(
    block: Any,
    emb: Float[Tensor, "token d_model"],
    U: Float[Tensor, "d_model token"],
    n_heads: int,
) -> Float[Tensor, " head"]:
    """The copying score of every head of one block, all heads at once."""
    x = emb.to(module_device(block, emb.device))
    ln1 = getattr(block, "ln1", None)
    if ln1 is not None:
        x = ln1(x.unsqueeze(0)).squeeze(0)
    x = x.float()
    W_V = expand_heads(block.attn.W_V.float(), n_heads)  # [H, d, dh]
    W_O = block.attn.W_O.float()  # [H, dh, d]
    Ul = U.to(W_O.device)
    v = torch.einsum("sd,hde->hse", x.to(W_V.device), W_V)  # [H, S, dh]
    right = torch.einsum("hed,dt->het", W_O, Ul)  # [H, dh, S]
    logits = torch.bmm(v.to(right.device), right)  # [H, S(src), S(tgt)]
    return copy_share(logits)


def copy_share(logits: Float[Tensor, "head src tgt"]) -> Float[Tensor, " head"]:
    """Mean over source tokens of the signed, max-normalised logit of the attended token.

    ``z = logits - mean`` is never materialised: its diagonal, max and min are the logits'
    diagonal, max and min minus the row mean.
    """
    mean = logits.mean(-1)
    lo, hi = torch.aminmax(logits, dim=-1)
    diag = logits.diagonal(dim1=-2, dim2=-1) - mean
    up = (hi - mean).clamp_min(1e-30)
    down = (mean - lo).clamp_min(1e-30)
    share = diag.clamp_min(0) / up - (-diag).clamp_min(0) / down
    return share.mean(-1)


def expand_heads(w: Float[Tensor, "kv_head ..."], n_heads: int) -> Float[Tensor, "head ..."]:
    """Grouped-query K/V weights ``[n_kv, ...]`` -> one per query head (repeat_interleave)."""
    if w.shape[0] == n_heads:
        return w
    if n_heads % w.shape[0]:
        raise InputError(f"cannot map {w.shape[0]} key/value heads onto {n_heads} query heads")
    return w.repeat_interleave(n_heads // w.shape[0], dim=0)


def norm_gain(norm, d_model: int, like: torch.Tensor) -> Float[Tensor, " d_model"] | None:
    """Per-channel gain of the final norm (its scale-free part is irrelevant to shares).

    LayerNorm: its ``weight``. RMS-style norms (including Gemma's ``1 + weight``): the norm
    applied to a vector of ones, which is the gain up to one common factor.
    """
    if norm is None:
        return None
    comp = getattr(norm, "original_component", norm)
    if isinstance(comp, torch.nn.LayerNorm) or getattr(comp, "bias", None) is not None:
        w = getattr(comp, "weight", None)
        return None if w is None else w.detach()
    dev = module_device(norm, like.device)
    ones = torch.ones(1, 1, d_model, dtype=like.dtype, device=dev)
    try:
        return norm(ones).flatten().detach()
    except Exception:  # an exotic norm: leave the gain out
        return None
