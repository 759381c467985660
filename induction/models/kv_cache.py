"""Key-value caches through a TransformerBridge: cached decoding, and reusing a prompt's prefix.

Two users: the ablation engine decodes answers token by token, and the FV scores
(:mod:`induction.circuits.fv`) patch one head at the *last* position only. Under causal
attention such a patch changes nothing at earlier positions, so their keys and values can be
computed once per prompt batch and every patched row runs the last token alone: exact, and
about as many times cheaper as the prompt is long.

transformers 5 hands the cache to attention modules as ``cache=`` while TransformerLens 4.3's
attention bridges read ``past_key_values=``; :func:`enable_kv_cache` bridges the two. Without
it, cached decoding through a bridge silently ignores every earlier token.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import torch
from torch import Tensor


def _cache_kwarg_hook(module, args, kwargs):
    if kwargs.get("past_key_values") is None and kwargs.get("cache") is not None:
        kwargs["past_key_values"] = kwargs["cache"]
    return args, kwargs


def enable_kv_cache(bridge) -> None:
    """Make the bridge's attention components extend the HF KV cache (idempotent): a forward
    pre-hook on each ``blocks[i].attn`` copies ``cache=`` over to ``past_key_values=``."""
    if getattr(bridge, "_ablation_kv_patch", False):
        return
    for block in getattr(bridge, "blocks", []):
        attn = getattr(block, "attn", None)
        if attn is not None:
            attn.register_forward_pre_hook(_cache_kwarg_hook, with_kwargs=True)
    bridge._ablation_kv_patch = True


def cache_argument(hf_model) -> str:
    """The name ``hf_model.forward`` takes the cache by: ``cache`` (transformers 5) or
    ``past_key_values`` (earlier)."""
    params = inspect.signature(hf_model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def prefix_cache(loaded, ids: Tensor, mask: Tensor) -> tuple[Tensor, Any]:
    """One full pass over left-padded ``ids`` (no hooks): its last-position logits
    ``[batch, vocab]`` and the KV cache of every position but the last."""
    enable_kv_cache(loaded.bridge)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        out = loaded.hf_model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
    cache = getattr(out, "cache", None)
    cache = cache if cache is not None else out.past_key_values
    if any(getattr(layer, "is_sliding", False) for layer in getattr(cache, "layers", ())):
        # a sliding-window layer keeps only its window and cannot drop the last token
        # (Gemma 2/3, Mistral, Qwen2): build the cache from the prefix alone
        with torch.inference_mode():
            pre = loaded.hf_model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1],
                                  position_ids=pos[:, :-1], use_cache=True)  # fmt: skip
        cache = getattr(pre, "cache", None)
        cache = cache if cache is not None else pre.past_key_values
    else:
        cache.crop(-1)  # drop the last token: each patched copy runs it again
    return out.logits[:, -1].float(), cache


def repeated(cache: Any, reps: int) -> Any:
    """A copy of ``cache`` with each row repeated ``reps`` times in a row (row ``i * reps + j``
    is row ``i``'s ``j``-th copy); the original stays as it was, ready for the next chunk."""
    out = copy.deepcopy(cache)
    if reps > 1:
        out.batch_repeat_interleave(reps)
    return out


def selected(cache: Any, rows: Tensor) -> Any:
    """A cache holding ``cache``'s batch rows ``rows`` (repeats allowed); the original stays as
    it was. transformers 5's layered caches are copied layer by layer, so only the selected
    rows are materialised; other caches through a deep copy."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        out = copy.deepcopy(cache)
    else:
        out = copy.copy(cache)
        out.layers = [copy.copy(layer) for layer in layers]
    out.batch_select_indices(rows)
    return out


def last_token_logits(loaded, ids: Tensor, mask: Tensor, cache: Any, hooks, reps: int = 1):
    """Last-position logits of ``ids`` (``[batch, seq]``, left-padded) under ``hooks``, each row
    repeated ``reps`` times (row-major, as :func:`repeated`), computing the last token only on
    top of ``cache`` (:func:`prefix_cache` of the same ``ids``): ``[batch * reps, vocab]``."""
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    hf = loaded.hf_model
    kwargs = {cache_argument(hf): repeated(cache, reps)}
    with torch.inference_mode(), loaded.bridge.hooks(fwd_hooks=hooks):
        out = hf(
            input_ids=ids[:, -1:].repeat_interleave(reps, 0),
            attention_mask=mask.repeat_interleave(reps, 0),
            position_ids=pos[:, -1:].repeat_interleave(reps, 0),
            use_cache=True,
            **kwargs,
        )
    return out.logits[:, -1].float()
