"""In-context loss: next-token loss on the first copy of the random block against later copies.

An induction-capable model predicts the repeated copies far better than the first one; the
drop (``loss_first - loss_repeat``, nats) is the model-level counterpart of the head scores.
:func:`induction.scores.scan.in_context_loss` measures it; this module holds the arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from induction.stats import sample_std

if TYPE_CHECKING:
    from jaxtyping import Float, Int
    from torch import Tensor


def mean_nll(
    logits: Float[Tensor, "batch pos vocab"],
    tokens: Int[Tensor, "batch pos"],
    pos: Int[Tensor, " n"],
) -> Float[Tensor, " batch"]:
    """Per prompt, mean next-token NLL at logits positions ``pos``."""
    lp = logits.index_select(1, pos).float().log_softmax(-1)
    target = tokens.index_select(1, pos + 1)
    return -lp.gather(-1, target.unsqueeze(-1)).squeeze(-1).mean(-1)


def loss_summary(
    per_seed: Float[Tensor, "seed 2"], seeds: Sequence[int] | None = None
) -> dict[str, Any]:
    """Means over seeds of the first-copy and repeat losses and the drop, with their spread.

    ``per_seed[:, 0]`` is the first copy's loss, ``per_seed[:, 1]`` the later copies'. With
    ``seeds``, a ``per_seed`` list of rows is added.
    """
    first, rep = per_seed[:, 0].double(), per_seed[:, 1].double()
    drop = first - rep
    out: dict[str, Any] = {
        "loss_first": float(first.mean()),
        "loss_repeat": float(rep.mean()),
        "loss_drop": float(drop.mean()),
        "loss_first_std": sample_std(first),
        "loss_repeat_std": sample_std(rep),
        "loss_drop_std": sample_std(drop),
    }
    if seeds is not None:
        out["per_seed"] = [
            {"seed": int(s), "loss_first": float(a), "loss_repeat": float(b)}
            for s, a, b in zip(seeds, first.tolist(), rep.tolist(), strict=True)
        ]
    return out
