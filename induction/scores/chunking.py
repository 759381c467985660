"""How many prompts go through the model per forward pass."""

from __future__ import annotations

import math
from typing import Any

import torch

from induction.errors import InputError
from induction.scores.prompts import RepeatedPrompts

#: Tokens per forward pass on CPU: activations of a pass this size stay in the caches. Measured
#: with ``benchmarks/scan_speed.py --sweep-passes`` (1 and 2 threads): against one pass over the
#: batch, passes of about 512 tokens took 0.64-0.72x the time on the zoo model (8 x 65 tokens)
#: and 0.93x on SmolLM2 (4 x 101); much smaller passes lose it to per-pass overhead.
CPU_TOKENS_PER_PASS = 512


def auto_chunk(
    cfg: Any,
    prompts: RepeatedPrompts,
    device: torch.device,
    logits: bool,
    full_patterns: bool = True,
) -> int:
    """Prompts per forward pass: on CPU about :data:`CPU_TOKENS_PER_PASS` tokens (the rows
    split evenly); on CUDA what fits half the free memory.

    Per prompt, eager attention holds scores, mask and pattern (``heads x L x L``, counted in
    float32), and a layer's activations (``L x (12 d_model + 3 d_mlp)``); logits add
    ``2 x L x vocab`` (the logits and their log-softmax rows). Without ``full_patterns``
    (the query-chunked scan, :mod:`induction.scores.query_chunks`) attention holds one query block
    per pass, bounded apart, so only the activations count.
    """
    n_rows, L = int(prompts.tokens.shape[0]), prompts.layout.length
    if device.type != "cuda":
        passes = max(1, round(n_rows * L / CPU_TOKENS_PER_PASS))
        return max(1, math.ceil(n_rows / passes))
    d_model = int(getattr(cfg, "d_model", 0) or 1024)
    d_mlp = int(getattr(cfg, "d_mlp", 0) or 4 * d_model)
    patterns = 3 * int(cfg.n_heads) * L * L if full_patterns else 0
    per_row = 4 * (patterns + L * (12 * d_model + 3 * d_mlp))
    if logits:
        per_row += 4 * 2 * L * int(cfg.d_vocab)
    try:
        free, _ = torch.cuda.mem_get_info(device)
    except RuntimeError:  # pragma: no cover
        return min(n_rows, prompts.batch)
    return int(max(1, min(n_rows, (free // 2) // max(per_row, 1))))


def check_chunk(chunk: Any) -> int | None:
    """None (size automatically) or a positive integer."""
    if chunk is None:
        return None
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
        raise InputError(f"chunk must be a positive integer, got {chunk}")
    return chunk


def row_slices(n_rows: int, chunk: int) -> list[slice]:
    """Consecutive slices of at most ``chunk`` rows covering ``0..n_rows``."""
    return [slice(start, min(start + chunk, n_rows)) for start in range(0, n_rows, chunk)]
