"""Spread across prompt seeds: mean, standard deviation and a Student-t interval for the mean.

Pure tensor arithmetic on ``[n_seeds, ...]`` stacks (one row per seed); the quantile comes from
``scipy.stats.t.ppf`` (torch and scipy are imported on first use).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxtyping import Float
    from torch import Tensor

#: Two-sided confidence level of the ``_ci_lo`` / ``_ci_hi`` columns.
CI_LEVEL = 0.95


def t_quantile(n: int, level: float = CI_LEVEL) -> float:
    """Two-sided Student-t quantile ``t_{(1 + level) / 2, n - 1}`` for a mean of ``n`` values."""
    if n < 2:
        raise ValueError(f"a t interval needs at least two values, got {n}")
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, n - 1))


@dataclass(frozen=True, eq=False)  # tensors inside: compare fields, not results
class Spread:
    """Mean over seeds, its spread and a confidence interval, each ``[layer, head]`` float64."""

    mean: Float[Tensor, "layer head"]
    std: Float[Tensor, "layer head"]
    ci_lo: Float[Tensor, "layer head"]
    ci_hi: Float[Tensor, "layer head"]


def spread(per_seed: Float[Tensor, "seed layer head"], *, deterministic: bool = False) -> Spread:
    """Mean over the first axis, sample standard deviation and 95% Student-t interval.

    A deterministic quantity (``copying``, from the weights) has std 0 and a zero-width
    interval; a prompt quantity from a single seed has NaN spread.
    """
    import torch

    x = per_seed.double().cpu()
    n = x.shape[0]
    mean = x.mean(0)
    if n > 1:
        std = x.std(0, unbiased=True)
        half = t_quantile(n) * std / math.sqrt(n)
        lo, hi = mean - half, mean + half
    elif deterministic:
        std = torch.zeros_like(mean)
        lo = hi = mean
    else:
        std = torch.full_like(mean, float("nan"))
        lo = hi = std
    return Spread(mean, std, lo, hi)


def sample_std(x: Float[Tensor, " n"]) -> float:
    """Sample (n - 1) standard deviation as a float; NaN for fewer than two values."""
    return float(x.double().std(unbiased=True)) if x.numel() > 1 else float("nan")
