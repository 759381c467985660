"""The zoo's network, shared by both trainers: the tiny Llama a config describes, its name,
its FLOPs per token, and the trainer's in-loop induction monitor.

Both training configs (the first zoo's :class:`~induction.training.first_zoo.ZooTrainConfig` and
the fixed protocol's :class:`~induction.training.protocol.FixedTrainConfig`) describe a model
by the fields of :class:`ModelShape`, so the trainers share this module instead of importing
each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from induction.scores.prompts import PromptLayout
from induction.zoo import vocab as V

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM


class ModelShape(Protocol):
    """The fields of a training config that shape the network and its FLOPs (read only: the
    fixed protocol's ``seq_len`` is a property)."""

    @property
    def d_model(self) -> int: ...
    @property
    def d_mlp(self) -> int: ...
    @property
    def n_heads(self) -> int: ...
    @property
    def init_std(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def seq_len(self) -> int: ...


def zoo_model_name(cfg) -> str:
    """``grown-s0``; a depth other than the first zoo's 8 is spelled out: ``grown12-s0``; a
    fixed-protocol model is ``<preset>-s<seed>``."""
    if getattr(cfg, "protocol", None) == "fixed":
        return f"{cfg.preset}-s{cfg.seed}"
    depth = "" if cfg.depth == 8 else str(cfg.depth)
    return f"{cfg.family}{depth}-s{cfg.seed}"


def build_model(cfg: ModelShape, n_layers: int) -> LlamaForCausalLM:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=V.VOCAB_SIZE,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_mlp,
        num_hidden_layers=n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_heads,
        max_position_embeddings=256,
        bos_token_id=V.BOS_ID,
        eos_token_id=V.EOS_ID,
        pad_token_id=V.PAD_ID,
        tie_word_embeddings=False,
        use_cache=False,
        initializer_range=cfg.init_std,
    )
    # what the ``attn_implementation`` keyword sets, which LlamaConfig's signature does not name
    config._attn_implementation = "sdpa"
    torch.manual_seed(cfg.seed)
    return LlamaForCausalLM(config)


def matmul_flops_per_token(cfg: ModelShape, n_layers: int, seq_len: int | None = None) -> float:
    """Forward+backward matmul FLOPs per token: 6 x weights per layer x layers + unembedding,
    plus causal attention scores and mixing (2 x 2 x seq/2 x d per layer, x3 for backward)."""
    d = cfg.d_model
    per_layer = 4 * d * d + 3 * d * cfg.d_mlp
    attn = 2 * 2 * ((seq_len or cfg.seq_len) / 2) * d
    return 3 * (2 * (per_layer * n_layers + d * V.VOCAB_SIZE) + attn * n_layers)


@torch.no_grad()
def induction_head_scores(model, distance: int, batch: int = 16, seed: int = 999) -> torch.Tensor:
    """``[layer, head]`` stripe scores on ``[BOS] + r + r`` with ``len(r) = distance`` (see
    docs/research.md "Induction scores"). A light monitor on the training model itself (a
    ``LlamaForCausalLM``, no bridge, one batch) for the logs and the first zoo's growth
    trigger; the detector that results are read from is :mod:`induction.scores.scan`."""
    rng = np.random.default_rng(seed)
    r = np.stack(
        [
            rng.choice(np.arange(V.FIRST_ORDINARY_ID, V.VOCAB_SIZE), distance, replace=False)
            for _ in range(batch)
        ]
    )
    tokens = torch.tensor(np.concatenate([np.full((batch, 1), V.BOS_ID), r, r], axis=1))
    tokens = tokens.to(next(model.parameters()).device)
    was_training, impl = model.training, model.config._attn_implementation
    model.eval()
    model.set_attn_implementation("eager")
    try:
        attentions = model(tokens, output_attentions=True).attentions
    finally:
        model.set_attn_implementation(impl)
        model.train(was_training)
    # the detector's own (query, key) pairs of the stripe, so there is one definition of it
    q, k, n_queries = PromptLayout(seq_len=distance, n_repeats=2).pairs("induction")
    return torch.stack([a[:, :, q, k].sum(dim=2).mean(dim=0) / n_queries for a in attentions]).cpu()


def progress_label(
    name: str,
    depth: int,
    steps: int,
    seconds: float,
    loss: float | None = None,
    score: float | None = None,
) -> str:
    """Both trainers' progress label, e.g. ``dense8-s0 (depth 8, ind=0.41, loss 2.315, 3.20
    step/s)``: the depth now, the in-loop monitor's strongest induction score (``ind=``) and
    the loss at the last measured step, and ``steps`` trained in ``seconds`` as a rate."""
    parts = [f"depth {depth}"]
    if loss is not None and score is not None:
        parts += [f"ind={score:.2f}", f"loss {loss:.3f}"]
    if steps > 0 and seconds > 0:
        rate = steps / seconds
        parts.append(f"{rate:.2f} step/s" if rate >= 1 else f"{1 / rate:.1f} s/step")
    return f"{name} ({', '.join(parts)})"
