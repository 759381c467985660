"""Run the prompts through the bridge in passes, with the stripe hooks and/or the loss.

:func:`run_passes` is the only place that calls the model during a scan. Without logits the
pass stops at the last scored layer's attention pattern (see
:class:`induction.scores.stripe.StripeHook`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from induction.progress import Progress
from induction.scores.chunking import auto_chunk, check_chunk, row_slices
from induction.scores.loss import mean_nll
from induction.scores.prompts import RepeatedPrompts
from induction.scores.query_chunks import QueryChunkScores
from induction.scores.stripe import StripeHook, plan_pairs

if TYPE_CHECKING:
    from jaxtyping import Float
    from torch import Tensor


@dataclass
class PassOutput:
    """What the passes measured, on the CPU, one row per prompt."""

    attention: Float[Tensor, "row layer head score"] | None  # None without attention scores
    loss: Float[Tensor, "row 2"] | None  # first-copy and repeat loss; None unless asked


def run_passes(
    bridge: Any,
    prompts: RepeatedPrompts,
    attn_names: Sequence[str],
    convention: str,
    layers: list[int],
    device: torch.device,
    chunk: int | None,
    want_loss: bool,
    bar: Progress | None = None,
    mode: str = "eager",
) -> PassOutput:
    """Scores ``attn_names`` at ``layers`` (and the loss when ``want_loss``) for every prompt.

    ``mode``: ``"eager"`` reads each layer's whole pattern (:mod:`induction.scores.stripe`);
    ``"chunked"`` scores blocks of queries inside attention and never holds a pattern
    (:mod:`induction.scores.query_chunks`); without attention scores the passes are eager.
    """
    tokens = prompts.tokens
    n_rows = tokens.shape[0]
    chunk = check_chunk(chunk)
    chunked = mode == "chunked" and bool(attn_names)
    if chunk is None:
        chunk = auto_chunk(bridge.cfg, prompts, device, want_loss, full_patterns=not chunked)

    stripe = None
    hooks: list = []
    scorer = None
    context: Any = nullcontext()
    if attn_names:
        plan = plan_pairs(prompts.layout, attn_names, convention)
        n_heads = int(bridge.cfg.n_heads)
        if chunked:
            length = prompts.layout.length
            scorer = QueryChunkScores(plan, length, n_rows, len(layers), n_heads, device)
            context = scorer.attached(bridge, layers, stop_at_last=not want_loss)
        else:
            stripe = StripeHook(plan, n_rows, len(layers), n_heads, device)
            hooks = stripe.fwd_hooks(layers, stop_at_last=not want_loss)

    loss_rows = torch.zeros(n_rows, 2, device=device) if want_loss else None
    first_pos, rep_pos = prompts.layout.repeat_targets()
    first_pos, rep_pos = first_pos.to(device), rep_pos.to(device)

    slices = row_slices(n_rows, chunk)
    advance = bar.task(len(slices), f"forward passes over {n_rows} prompts") if bar else None
    with torch.inference_mode(), bridge.hooks(fwd_hooks=hooks), context:
        for rows in slices:
            if stripe is not None:
                stripe.rows = rows
            if scorer is not None:
                scorer.rows = rows
            x = tokens[rows].to(device, non_blocking=True)
            if loss_rows is not None:
                logits = bridge(x, return_type="logits")
                loss_rows[rows, 0] = mean_nll(logits, x, first_pos)
                loss_rows[rows, 1] = mean_nll(logits, x, rep_pos)
                del logits
            else:
                bridge(x, return_type=None)
            if advance is not None:
                advance()
    attention = None
    if stripe is not None:
        attention = stripe.out.cpu()
    elif scorer is not None:
        if not bool(scorer.written.all()):
            raise RuntimeError("the query-chunked scan did not reach every scored layer")
        attention = scorer.out.cpu()
    return PassOutput(
        attention=attention,
        loss=loss_rows.cpu() if loss_rows is not None else None,
    )
