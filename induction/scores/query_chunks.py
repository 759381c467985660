"""The scan without T x T patterns: attention scores from the model's own queries and keys, a
block of queries at a time.

The eager scan (:mod:`induction.scores.stripe`) reads ``blocks.{l}.attn.hook_pattern``, so every
layer of every pass holds the whole ``[batch, head, L, L]`` pattern (and the scores before the
softmax): gigabytes at 8k tokens. Here every attention module of the model runs the
transformers code path (``module.forward`` of the checkpoint's own attention class: its
projections, q/k norms, RoPE, GQA grouping, scaling, soft-capping, sliding window and sinks
as the model defines them) with the attention function swapped for :func:`_attend`, which
takes a block of queries at a time, computes their full softmax rows (the exact per-row
normaliser: a row's keys all fit in one block), reads the planned (query, key) pairs of
:func:`induction.scores.stripe.plan_pairs` from them, multiplies the block by the values, and drops
it. Memory per layer is ``batch x heads x block x L`` with ``block`` sized to
:data:`BLOCK_BYTES`, i.e. it grows with ``batch x heads x L`` instead of ``L x L``; the work
is the eager attention's. Same idea as FlashAttention (Dao et al. 2022, arXiv:2205.14135),
without the running log-sum-exp because the row is never split.

A model qualifies when its transformers class dispatches attention through
``AttentionInterface`` (``_supports_attention_backend``: Llama, Qwen, Gemma, Mistral, GPT-2,
GPT-NeoX, ...). ALiBi models (Bloom, MPT) compute attention inline; for them the scan stays
eager (``patterns="auto"``) or refuses (``patterns="chunked"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from induction.errors import InputError
from induction.scores.score_names import PATTERN_MODES
from induction.scores.stripe import PairPlan

if TYPE_CHECKING:
    from jaxtyping import Float
    from torch import Tensor

#: Bytes of float32 attention scores one query block may hold (scores, probabilities and the
#: mask together stay within about 3x this).
BLOCK_BYTES = 32 * 2**20
#: ``patterns="auto"`` computes chunked from this prompt length on (tokens, prefix included).
#: Below it the eager pattern of one pass is small and both cost the same; from here on the
#: eager scan's memory grows quadratically (benchmarks/scan_memory.py, docs/results.md).
AUTO_CHUNKED_FROM = 1024
_IMPL = "induction_query_chunks"
_ACTIVE: list[QueryChunkScores] = []  # the scorer whose passes are running


def _attend(*args: Any, **kwargs: Any) -> tuple[Tensor, None]:
    """The function registered in transformers' ``AttentionInterface``."""
    if not _ACTIVE:
        raise RuntimeError(f"attention implementation {_IMPL!r} runs only inside a scan")
    return _ACTIVE[-1].attend(*args, **kwargs)


def unsupported_reason(bridge: Any) -> str | None:
    """Why ``bridge``'s model cannot be scanned in query blocks, or None when it can."""
    hf = getattr(bridge, "original_model", None)
    if hf is None or not getattr(hf, "_supports_attention_backend", False):
        name = type(hf).__name__ if hf is not None else type(bridge).__name__
        return f"{name} computes attention inline, not through transformers' AttentionInterface"
    blocks = getattr(bridge, "blocks", None)
    if not blocks or any(
        getattr(getattr(b, "attn", None), "original_component", None) is None for b in blocks
    ):
        return "its blocks expose no attention module"
    return None


def choose_mode(patterns: str, bridge: Any, length: int) -> str:
    """``"eager"`` or ``"chunked"`` for ``patterns`` (see :data:`PATTERN_MODES`) on prompts of
    ``length`` tokens; a one-line error when ``"chunked"`` is forced on a model without it."""
    if patterns not in PATTERN_MODES:
        raise InputError(f"unknown patterns mode {patterns!r}; choose auto, eager or chunked")
    if patterns == "eager":
        return "eager"
    reason = unsupported_reason(bridge)
    if patterns == "chunked":
        if reason is not None:
            raise InputError(f"cannot scan in query chunks: {reason}; use patterns='eager'")
        return "chunked"
    return "chunked" if reason is None and length >= AUTO_CHUNKED_FROM else "eager"


class QueryChunkScores:
    """Fills ``out[rows, slot]`` (``[rows, layers, heads, scores]``, float32) like
    :class:`induction.scores.stripe.StripeHook`, from inside the attention function.

    Use :meth:`attached` around the forward passes; set :attr:`rows` before each pass.
    """

    def __init__(
        self, plan: PairPlan, length: int, n_rows: int, n_layers: int, n_heads: int, device
    ):
        self.plan = plan
        flat = plan.flat_index
        self.query_pos, self.key_pos = flat // length, flat % length
        self.n_cols = len(plan.names)
        self.out: Float[Tensor, "row layer head score"] = torch.zeros(
            n_rows, n_layers, n_heads, self.n_cols, device=device
        )
        self.rows = slice(0, 0)
        self.written = torch.zeros(n_layers, dtype=torch.bool)
        self._slot: int | None = None  # slot of the layer running now; None: not scored
        self._stop_slot = -1
        self._blocks: dict[tuple, tuple] = {}

    # ----------------------------------------------------------------- the attention function

    def _pairs_in(self, q0: int, q1: int, k0: int, device) -> tuple[Tensor, Tensor]:
        """Block-local flat indices of the planned pairs with queries in ``[q0, q1)`` and keys
        from ``k0``, and their weight rows (cached per block and device)."""
        key = (q0, q1, k0, device)
        if key not in self._blocks:
            q, k = self.query_pos, self.key_pos
            sel = (q >= q0) & (q < q1) & (k >= k0)
            local = (q[sel] - q0) * (q1 - k0) + (k[sel] - k0)
            self._blocks[key] = (local.to(device), self.plan.weights[sel].to(device))
        return self._blocks[key]

    def attend(
        self,
        module: torch.nn.Module,
        query: Float[Tensor, "batch head q d"],
        key: Float[Tensor, "batch kv k d"],
        value: Float[Tensor, "batch kv k dv"],
        attention_mask: Tensor | None,
        dropout: float = 0.0,
        scaling: float | None = None,
        sliding_window: int | None = None,
        softcap: float | None = None,
        s_aux: Tensor | None = None,
        **kwargs: Any,
    ) -> tuple[Tensor, None]:
        """transformers' attention-function contract (like ``sdpa_attention_forward``):
        causal attention by query blocks, scoring the layer on the way when it is scored."""
        if attention_mask is not None:
            raise InputError("the query-chunked scan takes unpadded prompts only (no mask)")
        if kwargs.get("position_bias") is not None:  # additive relative-position biases
            raise InputError("this model adds a position bias to attention; use patterns='eager'")
        b, h, L, d = query.shape
        kv, dv = key.shape[1], value.shape[-1]
        g = h // kv  # query heads per key/value head (GQA)
        scale = scaling if scaling is not None else d**-0.5
        qg = query.view(b, kv, g, L, d)
        kt = key.transpose(-1, -2).unsqueeze(2)  # [b, kv, 1, d, L]
        vg = value.unsqueeze(2)  # [b, kv, 1, L, dv]
        out = query.new_empty(b, L, h, dv)
        slot = self._slot
        vals = total = None
        if slot is not None:
            vals = torch.zeros(b * h, self.n_cols, device=query.device)
            total = torch.zeros(b, h, device=query.device)
        block = max(1, BLOCK_BYTES // (4 * b * h * L))
        pos = torch.arange(L, device=query.device)
        for q0 in range(0, L, block):
            q1 = min(L, q0 + block)
            k0 = 0 if sliding_window is None else max(0, q0 - int(sliding_window) + 1)
            scores = torch.matmul(qg[:, :, :, q0:q1], kt[..., k0:q1]) * scale
            if softcap is not None:
                scores = torch.tanh(scores / softcap) * softcap
            qp, kp = pos[q0:q1, None], pos[None, k0:q1]
            hide = kp > qp
            if sliding_window is not None:
                hide = hide | (kp <= qp - int(sliding_window))
            scores = scores.masked_fill(hide, float("-inf"))
            if s_aux is not None:  # attention sinks (GPT-OSS): one extra logit per head
                sink = s_aux.reshape(1, kv, g, 1, 1).to(scores.dtype)
                both = torch.cat([scores, sink.expand(*scores.shape[:-1], 1)], dim=-1)
                both = both - both.max(dim=-1, keepdim=True).values
                probs = torch.softmax(both, dim=-1, dtype=torch.float32)[..., :-1]
            else:
                probs = torch.softmax(scores, dim=-1, dtype=torch.float32)
            probs = probs.to(query.dtype)
            del scores
            if vals is not None and total is not None:
                local, weights = self._pairs_in(q0, q1, k0, query.device)
                flat = probs.reshape(b * h, -1)
                if local.numel():
                    vals += torch.mm(flat.index_select(1, local).float(), weights)
                total += probs.sum(dim=(-2, -1), dtype=torch.float32).view(b, h)
            blk = torch.matmul(probs.to(value.dtype), vg[..., k0:q1, :])  # [b, kv, g, c, dv]
            out[:, q0:q1] = blk.reshape(b, h, q1 - q0, dv).transpose(1, 2)
            del probs, blk
        if slot is not None and vals is not None and total is not None:
            vals = vals.view(b, h, self.n_cols)
            norm = self.plan.normalize.to(query.device)
            vals = torch.where(norm, vals / total.unsqueeze(-1), vals)
            self.out[self.rows, slot] = vals.to(self.out.device)
            self.written[slot] = True
            if slot == self._stop_slot:
                from transformer_lens.model_bridge.exceptions import StopAtLayerException

                raise StopAtLayerException(out)
        return out, None

    # ----------------------------------------------------------------- wiring

    @contextmanager
    def attached(self, bridge: Any, layers: Sequence[int], stop_at_last: bool):
        """Run every attention module of ``bridge`` through :meth:`attend` inside the block;
        the layers in ``layers`` are scored into ``out[:, slot]``. With ``stop_at_last`` the
        pass ends after the last scored layer (as the eager hook does)."""
        from transformers import AttentionInterface

        reason = unsupported_reason(bridge)
        if reason is not None:
            raise InputError(f"cannot scan in query chunks: {reason}; use patterns='eager'")
        AttentionInterface.register(_IMPL, _attend)
        slots = {layer: slot for slot, layer in enumerate(layers)}
        self._stop_slot = len(layers) - 1 if stop_at_last else -1
        configs, patched = [], []

        def routed(attn_bridge, slot):
            hf_attn = attn_bridge.original_component

            def forward(*args, **kwargs):
                self._slot = slot
                try:
                    return hf_attn(*args, **kwargs)
                finally:
                    self._slot = None

            return forward

        try:
            hf = bridge.original_model
            for cfg in {id(c): c for c in _configs(hf, bridge)}.values():
                configs.append((cfg, cfg._attn_implementation))
                cfg._attn_implementation = _IMPL
            for layer, block in enumerate(bridge.blocks):
                # past the bridge's __setattr__, which forwards attributes to the HF module
                object.__setattr__(block.attn, "forward", routed(block.attn, slots.get(layer)))
                patched.append(block.attn)
            _ACTIVE.append(self)
            yield self
        finally:
            if _ACTIVE and _ACTIVE[-1] is self:
                _ACTIVE.pop()
            for attn in patched:
                object.__delattr__(attn, "forward")
            for cfg, impl in configs:
                cfg._attn_implementation = impl
            self._slot = None


def _configs(hf: Any, bridge: Any) -> list:
    """Every config object the attention modules and the mask builder read."""
    found = [hf.config]
    text = getattr(hf.config, "get_text_config", None)
    if callable(text):
        found.append(text())
    for block in bridge.blocks:
        cfg = getattr(block.attn.original_component, "config", None)
        if cfg is not None:
            found.append(cfg)
    return found
