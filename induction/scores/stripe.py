"""The scan hook: read only the (query, key) pairs the attention scores need, reduce on the spot.

Every attention score is a weighted sum of a few entries of each head's pattern (definitions
in :meth:`induction.scores.prompts.PromptLayout.pairs`). :func:`plan_pairs` lists the flat
``query * L + key`` positions every requested score reads and a ``[pairs, scores]`` weight
matrix; :class:`StripeHook` on ``blocks.{l}.attn.hook_pattern`` then does one
``index_select`` and one small matmul per layer and pass, giving ``[batch, head, score]``
written into a preallocated tensor on the model's device. No per-head Python loop, no cache,
no ``.item()``.

Convention ``tl_mul`` (TransformerLens ``detect_head(..., error_measure="mul")``) weighs its
mask with 1 and divides by the sum of the whole pattern; ``stripe`` averages over the queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from induction.scores.prompts import PromptLayout
from induction.scores.score_names import TL_SCORES

if TYPE_CHECKING:
    from jaxtyping import Bool, Float, Int
    from torch import Tensor


@dataclass
class PairPlan:
    """Flat (query * L + key) indices of every pair read, and how they sum into scores."""

    flat_index: Int[Tensor, " pairs"]
    weights: Float[Tensor, "pairs score"]  # 1/n_queries (stripe) or 1 (tl_mul columns)
    normalize: Bool[Tensor, " score"]  # divide by the pattern's total (tl_mul)
    names: tuple[str, ...]


def plan_pairs(layout: PromptLayout, names: Sequence[str], convention: str) -> PairPlan:
    """The pairs and weights of ``names`` (attention scores) under ``convention``."""
    L = layout.length
    idx, cols = [], []
    norm = []
    for j, name in enumerate(names):
        if convention == "tl_mul" and name in TL_SCORES:
            qk = layout.tl_pairs(name)
            q, k = qk[0], qk[1]
            w = torch.ones(q.numel())
            norm.append(True)
        else:
            q, k, n_q = layout.pairs(name)
            w = torch.full((q.numel(),), 1.0 / n_q)
            norm.append(False)
        idx.append(q * L + k)
        cols.append((j, w))
    flat = torch.cat(idx)
    weights = torch.zeros(flat.numel(), len(names), dtype=torch.float32)
    start = 0
    for j, w in cols:
        weights[start : start + w.numel(), j] = w
        start += w.numel()
    return PairPlan(flat, weights, torch.tensor(norm, dtype=torch.bool), tuple(names))


class StripeHook:
    """Hooks for ``blocks.{l}.attn.hook_pattern`` that fill ``out[rows, slot]``.

    ``out`` is ``[rows, layers, heads, scores]`` (float32, on ``device``); set :attr:`rows`
    to the slice of prompts in the current forward pass before running it. The hook of the
    last scored layer raises TransformerLens's ``StopAtLayerException`` when ``stop`` is set,
    so nothing after that attention pattern runs.
    """

    def __init__(
        self,
        plan: PairPlan,
        n_rows: int,
        n_layers: int,
        n_heads: int,
        device: torch.device,
    ):
        self.plan = plan
        self.n_cols = len(plan.names)
        self.any_norm = bool(plan.normalize.any())
        self.out: Float[Tensor, "row layer head score"] = torch.zeros(
            n_rows, n_layers, n_heads, self.n_cols, device=device
        )
        self.rows = slice(0, 0)
        self._consts: dict[torch.device, tuple] = {}  # per device (a model on a device_map)
        self._on(device)

    def _on(self, device: torch.device) -> tuple:
        if device not in self._consts:
            p = self.plan
            self._consts[device] = (
                p.flat_index.to(device),
                p.weights.to(device),
                p.normalize.to(device),
            )
        return self._consts[device]

    def reduce(self, pattern: Float[Tensor, "batch head q k"]) -> Float[Tensor, "batch head score"]:
        """The scores of one pattern: only the planned (query, key) pairs are read."""
        flat, weights, norm_cols = self._on(pattern.device)
        b, h = pattern.shape[:2]
        picked = pattern.reshape(b * h, -1).index_select(1, flat)  # [b*h, pairs]
        vals = torch.mm(picked.float(), weights).view(b, h, self.n_cols)
        if self.any_norm:
            total = pattern.sum(dim=(-2, -1), dtype=torch.float32)  # [batch, head]
            vals = torch.where(norm_cols, vals / total.unsqueeze(-1), vals)
        return vals

    def hook(self, slot: int, stop: bool):
        """The hook function for the layer stored at ``out[:, slot]``."""
        from transformer_lens.model_bridge.exceptions import StopAtLayerException

        def fn(pattern: Float[Tensor, "batch head q k"], hook=None) -> None:
            vals = self.reduce(pattern)
            self.out[self.rows, slot] = vals.to(self.out.device, non_blocking=True)
            if stop:
                raise StopAtLayerException(pattern)
            return None

        return fn

    def fwd_hooks(self, layers: Sequence[int], stop_at_last: bool) -> list[tuple[str, object]]:
        """``(hook name, fn)`` for ``bridge.hooks(fwd_hooks=...)``, one per scored layer."""
        last = layers[-1]
        return [
            (f"blocks.{layer}.attn.hook_pattern", self.hook(slot, stop_at_last and layer == last))
            for slot, layer in enumerate(layers)
        ]
