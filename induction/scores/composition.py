"""Weight-only composition scores between attention heads (Elhage et al. 2021, "A mathematical
framework for transformer circuits"; docs/research.md, "Circuits and per-head causality").

Conventions. TransformerLens weights act on row vectors: ``q = x W_Q``, ``k = x W_K``,
``v = x W_V`` (each ``[d_model, d_head]``) and a head writes ``z W_O`` (``W_O`` is
``[d_head, d_model]``). So ``W_QK = W_Q W_Kᵀ`` (the attention score is ``x_q W_QK x_kᵀ``) and
``W_OV = W_V W_O`` (the head writes ``x_src W_OV``). When an earlier head A writes into the
residual stream that a later head B reads:

- **K-composition** (B's keys read A's output): the score bilinear form becomes
  ``x_q W_QK^B (x_src W_OV^A)ᵀ``, so the matrix is ``W_QK^B W_OV^Aᵀ`` and
  ``K = ‖W_OV^A W_QK^Bᵀ‖_F / (‖W_OV^A‖_F ‖W_QK^B‖_F)``. This is Elhage et al.'s
  ``W_QK W_OV`` in their column-vector convention (TransformerLens's
  ``composition_scores(OV, QK.T)``). Written with the row-convention matrices above, the
  product ``W_QKᵀ W_OV`` pairs ``W_Q`` with ``W_V`` and is *Q*-composition's transpose; the
  workbench therefore computes K-composition as ``W_OV^A W_QK^Bᵀ`` (the path
  ``W_V^A W_O^A W_K^B``), the one a head whose ``W_OV`` writes what another's keys read
  scores 1 on (tests/induction/scores/test_composition.py).
- **Q-composition**: ``‖W_OV^A W_QK^B‖ / (…)`` (B's queries read A); **V-composition**:
  ``‖W_OV^A W_OV^B‖ / (…)``.

Handled details:

- **Grouped-query attention**: a query head uses its key/value group's ``W_K`` / ``W_V``
  (query head ``h`` of ``H`` uses KV head ``h // (H / n_kv)``, as ``repeat_interleave``).
- **Norm gains**: the input norm of each layer scales the residual per channel before
  ``W_Q``, ``W_K``, ``W_V``; its gain (RMSNorm ``weight``, LayerNorm ``weight``, Gemma's
  ``1 + weight``) is folded into those matrices. The per-token scale of the norm (the 1/RMS
  factor) is not a weight and is left out, as is LayerNorm centring.
- **RoPE**: rotary embeddings rotate queries and keys by their positions, so the true QK
  circuit differs for every (query, key) offset. The score here ignores the rotation, an
  approximation: the activation test of :mod:`circuits` (the drop in the induction head's
  score when the partner is ablated on the path into its keys) is the check.

Norms use the factored form ``‖X Yᵀ‖_F = ‖R_X R_Yᵀ‖_F`` with ``X = Q_X R_X`` (thin QR), so no
``d_model x d_model`` matrix is ever built: a pair costs ``O(d_head^2 d_model)``.

The **baseline** is the mean score of Gaussian random matrices of the same shapes
(:func:`random_baseline`); the score of a real pair minus the baseline is what stands out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from induction.errors import InputError

KINDS = ("k", "q", "v")


@dataclass
class HeadWeights:
    """Per-head weights of every layer, float32 on CPU, norm gains folded in.

    ``W_Q``, ``W_K``, ``W_V``: ``[layers, heads, d_model, d_head]`` (K and V expanded from
    their key/value groups); ``W_O``: ``[layers, heads, d_head, d_model]``.
    """

    W_Q: Float[Tensor, "layer head d_model d_head"]
    W_K: Float[Tensor, "layer head d_model d_head"]
    W_V: Float[Tensor, "layer head d_model d_head"]
    W_O: Float[Tensor, "layer head d_head d_model"]
    n_kv_heads: int
    gains_folded: bool

    @property
    def n_layers(self) -> int:
        return int(self.W_Q.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.W_Q.shape[1])


def expand_kv(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Grouped-query K/V weights ``[n_kv, ...]`` -> one per query head (repeat_interleave)."""
    if w.shape[0] == n_heads:
        return w
    if n_heads % w.shape[0]:
        raise InputError(f"cannot map {w.shape[0]} key/value heads onto {n_heads} query heads")
    return w.repeat_interleave(n_heads // w.shape[0], dim=0)


def norm_gain(norm: Any, d_model: int) -> torch.Tensor | None:
    """Per-channel gain of a norm module (None when there is none or it cannot be read).

    LayerNorm-like (has a bias): its ``weight``. RMS-style (including Gemma's ``1 + weight``):
    the norm applied to a vector of ones, whose RMS is 1, which is the gain.
    """
    if norm is None:
        return None
    comp = getattr(norm, "original_component", norm)
    if isinstance(comp, torch.nn.LayerNorm) or getattr(comp, "bias", None) is not None:
        w = getattr(comp, "weight", None)
        return None if w is None else w.detach().float().cpu()
    try:
        p = next(comp.parameters())
    except (StopIteration, AttributeError):
        return None
    ones = torch.ones(1, 1, d_model, dtype=p.dtype, device=p.device)
    try:
        with torch.no_grad():
            return comp(ones).flatten().detach().float().cpu()
    except Exception:  # an exotic norm: leave the gain out
        return None


def head_weights(model: Any, fold_norms: bool = True) -> HeadWeights:
    """Read every head's weights from a LoadedModel or TransformerBridge."""
    bridge = getattr(model, "bridge", model)
    n_heads = int(bridge.cfg.n_heads)
    d_model = int(bridge.cfg.d_model)
    qs, ks, vs, os_ = [], [], [], []
    n_kv = n_heads
    folded = False
    with torch.no_grad():
        for block in bridge.blocks:
            attn = block.attn
            W_Q = attn.W_Q.detach().float().cpu()
            W_K = attn.W_K.detach().float().cpu()
            W_V = attn.W_V.detach().float().cpu()
            n_kv = int(W_K.shape[0])
            W_K, W_V = expand_kv(W_K, n_heads), expand_kv(W_V, n_heads)
            gain = norm_gain(getattr(block, "ln1", None), d_model) if fold_norms else None
            if gain is not None:
                g = gain[None, :, None]
                W_Q, W_K, W_V = W_Q * g, W_K * g, W_V * g
                folded = True
            qs.append(W_Q)
            ks.append(W_K)
            vs.append(W_V)
            os_.append(attn.W_O.detach().float().cpu())
    return HeadWeights(
        torch.stack(qs), torch.stack(ks), torch.stack(vs), torch.stack(os_), n_kv, folded
    )


def _r(x: torch.Tensor) -> torch.Tensor:
    """R of the thin QR of ``x`` (``[..., d, r]`` -> ``[..., r, r]``): ``‖M xᵀ‖ = ‖M R_xᵀ‖``."""
    return torch.linalg.qr(x, mode="r").R


@dataclass
class _Factors:
    """What the pair scores need, per head (flattened ``layer * H + head``), float64."""

    Qo: Float[Tensor, "n d_model d_head"]  # orthonormal basis of the writer's output (W_Oᵀ)
    ra: Float[Tensor, "n d_head d_head"]  # R of W_V R_Oᵀ (the writer's OV = (W_V R_Oᵀ) Qoᵀ)
    ov_norm: Float[Tensor, " n"]  # ‖W_OV‖_F
    meet: Float[Tensor, "n d_model d_head"]  # the reader's matrix on the writer's output
    rb: Float[Tensor, "n d_head d_head"]  # R of the reader's other factor
    reader_norm: Float[Tensor, " n"]  # ‖W_QK‖_F (k, q) or ‖W_OV‖_F (v)


def _factors(weights: HeadWeights, kind: str) -> _Factors:
    if kind not in KINDS:
        raise InputError(f"unknown composition kind {kind!r}; use one of {KINDS}")
    n = weights.n_layers * weights.n_heads

    def flat(w):
        return w.double().reshape(n, *w.shape[2:])

    Q, K, V = flat(weights.W_Q), flat(weights.W_K), flat(weights.W_V)
    OT = flat(weights.W_O).transpose(1, 2)  # [n, d, dh]
    Qo, Ro = torch.linalg.qr(OT, mode="reduced")  # W_Oᵀ = Qo Ro, so W_O = Roᵀ Qoᵀ
    ov_left = V @ Ro.transpose(1, 2)  # W_OV = W_V W_O = ov_left Qoᵀ
    ov_norm = ov_left.flatten(1).norm(dim=-1)
    qk_norm = (_r(Q) @ _r(K).transpose(1, 2)).flatten(1).norm(dim=-1)  # ‖W_Q W_Kᵀ‖
    if kind == "k":  # W_OV^A W_QK^Bᵀ = W_OV^A W_K^B W_Q^Bᵀ
        meet, other, reader_norm = K, Q, qk_norm
    elif kind == "q":  # W_OV^A W_QK^B = W_OV^A W_Q^B W_K^Bᵀ
        meet, other, reader_norm = Q, K, qk_norm
    else:  # W_OV^A W_OV^B = W_OV^A W_V^B W_O^B
        meet, other, reader_norm = V, OT, ov_norm
    return _Factors(Qo, _r(ov_left), ov_norm, meet, _r(other), reader_norm)


def _pair_scores(f: _Factors, writers: Int[Tensor, " a"], reader: int) -> Float[Tensor, " a"]:
    """Scores of ``writers`` (flat indices) into one ``reader``:
    ``‖R_a (Qo_aᵀ meet_b) R_bᵀ‖ / (‖W_OV^a‖ ‖reader‖)``."""
    mid = f.Qo[writers].transpose(1, 2) @ f.meet[reader]  # [a, dh, dh]
    prod = f.ra[writers] @ mid @ f.rb[reader].T
    return prod.flatten(1).norm(dim=-1) / (f.ov_norm[writers] * f.reader_norm[reader])


def composition_scores(
    weights: HeadWeights,
    kind: str = "k",
    readers: Sequence[tuple[int, int]] | None = None,
) -> Float[Tensor, "layer_a head_a layer_b head_b"]:
    """Composition score of every (writer A, reader B) head pair: ``[L, H, L, H]``.

    Entry ``[la, ha, lb, hb]`` is the score of A = (la, ha) into B = (lb, hb); pairs with
    ``la >= lb`` (A not earlier than B), and readers not in ``readers`` (default: all), are
    NaN. ``kind``: ``"k"``, ``"q"`` or ``"v"``. A reader costs
    ``O(writers x d_model x d_head^2)``, so pass the readers you need on large models.
    """
    L, H = weights.n_layers, weights.n_heads
    f = _factors(weights, kind)
    out = torch.full((L * H, L * H), float("nan"), dtype=torch.float64)
    if readers is None:
        readers = [(lb, hb) for lb in range(1, L) for hb in range(H)]
    for lb, hb in readers:
        if not (0 <= lb < L and 0 <= hb < H):
            raise InputError(f"head {lb}.{hb} out of range ({L} layers x {H} heads)")
        if lb == 0:
            continue
        b = lb * H + hb
        writers = torch.arange(lb * H)
        out[writers, b] = _pair_scores(f, writers, b)
    return out.reshape(L, H, L, H).float()


def random_baseline(
    d_model: int, d_head: int, kind: str = "k", n_samples: int = 200, seed: int = 0
) -> tuple[float, float]:
    """Mean and standard deviation of the composition score of Gaussian random heads.

    Random matrices of the same shapes as a real pair (``W_Q``, ``W_K``, ``W_V``
    ``[d_model, d_head]``, ``W_O`` ``[d_head, d_model]``); the score is scale-free, so the
    variance does not matter.
    """
    if kind not in KINDS:
        raise InputError(f"unknown composition kind {kind!r}; use one of {KINDS}")
    gen = torch.Generator().manual_seed(int(seed))

    def rnd(*shape):
        return torch.randn(2, n_samples, *shape, generator=gen)  # 2 layers x n_samples heads

    w = HeadWeights(
        rnd(d_model, d_head), rnd(d_model, d_head), rnd(d_model, d_head),
        rnd(d_head, d_model), n_kv_heads=n_samples, gains_folded=False,
    )  # fmt: skip
    f = _factors(w, kind)
    # pair head i of layer 0 with head i of layer 1: n_samples independent random pairs
    scores = torch.stack(
        [_pair_scores(f, torch.tensor([i]), n_samples + i)[0] for i in range(n_samples)]
    )
    return float(scores.mean()), float(scores.std())
