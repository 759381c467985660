"""K-composition on hand-built weights (Elhage et al. 2021; docs/research.md)."""

from __future__ import annotations

import pytest
import torch

from induction.scores.composition import HeadWeights, composition_scores, random_baseline

D, DH = 8, 2


def e(i: int) -> torch.Tensor:
    v = torch.zeros(D)
    v[i] = 1.0
    return v


def col(*vectors) -> torch.Tensor:
    """[D, DH] with the given columns (zero-padded)."""
    m = torch.zeros(D, DH)
    for j, v in enumerate(vectors):
        m[:, j] = v
    return m


def two_layer(writer_out: torch.Tensor) -> HeadWeights:
    """Layer 0 head 0 writes ``writer_out`` (reading e1); layer 1 head 0 keys read e3."""
    W_Q = torch.stack([torch.stack([col(e(5))]), torch.stack([col(e(5))])])
    W_K = torch.stack([torch.stack([col(e(6))]), torch.stack([col(e(3))])])
    W_V = torch.stack([torch.stack([col(e(1))]), torch.stack([col(e(2))])])
    O0 = torch.zeros(DH, D)
    O0[0] = writer_out
    O1 = torch.zeros(DH, D)
    O1[0] = e(7)
    W_O = torch.stack([torch.stack([O0]), torch.stack([O1])])
    return HeadWeights(W_Q, W_K, W_V, W_O, n_kv_heads=1, gains_folded=False)


def test_writer_into_keys_scores_one():
    k = composition_scores(two_layer(e(3)), "k")
    assert k[0, 0, 1, 0].item() == pytest.approx(1.0, abs=1e-6)
    # the same writer does not reach the reader's queries (which read e5)
    assert composition_scores(two_layer(e(3)), "q")[0, 0, 1, 0].item() == pytest.approx(0.0)


def test_orthogonal_writer_scores_zero_and_order_is_respected():
    k = composition_scores(two_layer(e(4)), "k")
    assert k[0, 0, 1, 0].item() == pytest.approx(0.0, abs=1e-6)
    assert torch.isnan(k[1, 0, 0, 0])  # a later head is never a writer
    assert torch.isnan(k[0, 0, 0, 0])


def test_random_heads_score_near_the_baseline():
    torch.manual_seed(0)
    L, H, d, dh = 3, 8, 64, 16
    w = HeadWeights(
        torch.randn(L, H, d, dh), torch.randn(L, H, d, dh), torch.randn(L, H, d, dh),
        torch.randn(L, H, dh, d), n_kv_heads=H, gains_folded=False,
    )  # fmt: skip
    k = composition_scores(w, "k")
    real = k[~torch.isnan(k)]
    mean, std = random_baseline(d, dh, "k", n_samples=100)
    assert 0 < mean < 0.5 and std > 0
    assert abs(real.mean().item() - mean) < 3 * std / (real.numel() ** 0.5) + 0.01


def test_random_baseline_is_seeded():
    assert random_baseline(32, 8, n_samples=20, seed=1) == random_baseline(
        32, 8, n_samples=20, seed=1
    )
