"""Many seeds of one fixed-protocol arm trained in one process, as one batched model.

Each seed keeps its own model, optimizer, growth log, counters and run folder, exactly as a
single-seed run (:func:`induction.training.protocol.train_fixed`): its own initial weights
(``torch.manual_seed(seed)``), its own batches (``batch_at``), growth at the preset's steps,
checkpoints, resume states and card in the same format. Only the forward and backward pass is
shared: at each step the seeds' weights are stacked (``[seeds, ...]``) and one functional Llama
forward (:func:`stacked_losses`) runs every seed's batch with batched matmuls, so a GPU sees
kernels ``seeds`` times larger. The stacked gradients go back to each seed's parameters, and
clipping and AdamW run per seed as today.

A batched seed matches its single-seed twin up to float rounding, not bit for bit (batched
kernels sum in another order): the tests hold every logged loss within 1e-4 and the final
probe answers equal on tiny configs of each arm kind (docs/zoo.md, "Many seeds per process").
On the CPU the default is one seed per process, so reruns stay bit-identical to the zoo's
history; on a GPU it is :data:`CUDA_SEEDS_PER_PROCESS`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from induction.errors import InputError
from induction.models.layers import decoder_layers
from induction.training.protocol import (
    CHECKPOINTS,
    TRAIN_CONFIG,
    FixedTrainConfig,
    _Run,
    batch_at,
    has_gates,
    model_name,
    train_runs,
)

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM

__all__ = [
    "CUDA_SEEDS_PER_PROCESS",
    "default_data_workers",
    "default_seeds_per_process",
    "parse_seeds",
    "stacked_losses",
    "train_batched",
    "train_seeds",
]

#: Seeds batched per process on a GPU: a zoo model's step is a few hundred small kernels, so
#: batching 8 seeds multiplies the work per launch by 8 (docs/zoo.md, "Training on a GPU").
CUDA_SEEDS_PER_PROCESS = 8
#: Steps ahead of the current one whose batches :class:`_Prefetch` draws meanwhile.
AHEAD = 2
#: Config fields the seeds of one process may differ in.
PER_SEED = ("seed", "data_seed")


def default_seeds_per_process(device: str) -> int:
    """8 on a GPU; 1 on the CPU, where batching measured 0.89-1.05x (a CPU step has no overhead
    left to share) and a single-seed run reproduces the zoo's history bit for bit."""
    return CUDA_SEEDS_PER_PROCESS if str(device).startswith("cuda") else 1


def parse_seeds(text: str, flag: str = "--seeds") -> list[int]:
    """``"0-7"``, ``"0,2,5"`` or ``"0-3,8"`` as distinct seeds in order, or a one-line error."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            first, last = int(lo), int(hi) if hi else int(lo)
            if last < first:
                raise ValueError
            seeds += range(first, last + 1)
    except ValueError:
        seeds = []
    if not seeds or len(set(seeds)) != len(seeds) or not all(0 <= s < 2**32 for s in seeds):
        raise InputError(
            f"{flag} takes distinct seeds in 0..{2**32 - 1} as a list or ranges (0-7, 0,2,5 or "
            f"0-3,8), got {text!r}"
        )
    return seeds


def train_seeds(
    cfgs: list[FixedTrainConfig | None],
    outs: list[Path | None] | None = None,
    *,
    resume: bool | list[bool] = False,
    progress: bool = True,
    stop_at: int | None = None,
    device: str | None = None,
    data_workers: int | None = None,
) -> list[tuple[object, dict]]:
    """Train the seeds ``cfgs`` (one arm: configs equal but for ``seed`` and ``data_seed``) in
    this process as one batched model; returns ``(model, card)`` per seed, in order. ``outs``:
    each seed's run folder (written as :func:`~induction.training.protocol.train_fixed` writes
    it; the card records ``train_seeds_per_process``). ``resume`` (one flag, or one per seed):
    continue that seed's folder from its latest training state (its config then comes from the
    folder, and its ``cfgs`` entry may be None); seeds at different steps train in smaller
    batches until they meet. ``stop_at``, ``device``: as for ``train_fixed``. ``data_workers``:
    processes that draw the coming steps' batches meanwhile (a batch depends on its config and
    step only, so the result is the same); default none on the CPU, one per seed up to the
    cores left on a GPU, where drawing ~5 ms per seed and step would otherwise dominate."""
    n = len(cfgs)
    folders = [Path(o) if o is not None else None for o in outs] if outs is not None else [None] * n
    flags = list(resume) if isinstance(resume, list | tuple) else [resume] * n
    if n == 0 or len(folders) != n or len(flags) != n:
        raise InputError(f"train_seeds needs one config, folder and resume flag per seed ({n})")
    named = [o.resolve() for o in folders if o is not None]
    if len(set(named)) != len(named):
        raise InputError("train_seeds: two seeds share a run folder; give each its own")
    given: list[FixedTrainConfig | Path] = []  # each seed's config, or the folder that has it
    for out, flag, cfg in zip(folders, flags, cfgs, strict=True):
        if out is not None and (out / "card.json").is_file():
            raise InputError(f"{out} has finished training; nothing to resume or overwrite")
        if out is not None and not flag and (out / CHECKPOINTS).exists():
            raise InputError(f"{out} already holds a run; resume it or pass another folder")
        if flag and out is not None and (out / TRAIN_CONFIG).is_file():
            given.append(out)
            continue
        if flag or not isinstance(cfg, FixedTrainConfig):
            raise InputError(
                f"{out}: nothing to resume (no {TRAIN_CONFIG}); give a fixed-protocol config"
                if flag
                else f"train_seeds takes fixed-protocol configs, got {type(cfg).__name__}"
            )
        given.append(cfg)
    found = [
        FixedTrainConfig.from_json(json.loads((g / TRAIN_CONFIG).read_text()))
        if isinstance(g, Path)
        else g
        for g in given
    ]
    if device is not None:
        found = [replace(cfg, device=device) for cfg in found]
    check_group(found)
    gated = any(has_gates(cfg) for cfg in found)
    if gated and data_workers:  # refused before any run folder is written
        raise InputError(
            "a gated data phase depends on each seed's probe, so its batches cannot be drawn "
            "ahead; pass data_workers=0"
        )
    runs = [
        _Run(cfg, out, flag, device, progress, seeds_per_process=n)
        for cfg, out, flag in zip(found, folders, flags, strict=True)
    ]
    if data_workers is None:
        data_workers = 0 if gated else default_data_workers(runs[0].cfg.device, n)
    return train_batched(runs, stop_at, data_workers)


def default_data_workers(device: str, seeds: int) -> int:
    """0 on the CPU (its cores are the training's); on a GPU one per seed, up to the cores but
    one."""
    return min(seeds, (os.cpu_count() or 1) - 1) if str(device).startswith("cuda") else 0


def train_batched(runs: list[_Run], stop_at: int | None = None, data_workers: int = 0):
    """:func:`train_runs` over the stacked forward, batches drawn by ``data_workers``
    processes (0: in this one)."""
    if data_workers < 1:
        return train_runs(runs, _stacked_step, stop_at)
    with _Prefetch(data_workers) as prefetch:
        return train_runs(runs, _stacked_step, stop_at, draw=prefetch.draw)


class _Prefetch:
    """The batches of each run's next :data:`AHEAD` steps, drawn by ``batch_at`` in worker
    processes while the current step trains."""

    def __init__(self, workers: int):
        context = multiprocessing.get_context("forkserver")  # no fork of a CUDA process
        context.set_forkserver_preload(["induction.training.protocol"])
        self.pool = ProcessPoolExecutor(workers, mp_context=context)
        self.pending: dict[tuple[int, int], Future] = {}

    def __enter__(self) -> _Prefetch:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(cancel_futures=True)

    def _submit(self, run: _Run, step: int) -> Future:
        key = (id(run), step)
        if key not in self.pending:
            self.pending[key] = self.pool.submit(batch_at, run.cfg, step)
        return self.pending[key]

    def draw(self, runs: list[_Run]) -> list[np.ndarray]:
        for run in runs:
            for step in range(run.st.step, min(run.st.step + AHEAD + 1, run.cfg.steps)):
                self._submit(run, step)
        return [self.pending.pop((id(run), run.st.step)).result() for run in runs]


def check_group(cfgs: list[FixedTrainConfig]) -> None:
    """Seeds of one process share everything but :data:`PER_SEED`: the same shapes, schedule,
    growth steps and device, so every step stacks."""
    names = [model_name(c) for c in cfgs]
    if len(set(names)) != len(names):
        raise InputError(f"seeds of one process must differ; got {', '.join(names)}")
    first = {k: v for k, v in asdict(cfgs[0]).items() if k not in PER_SEED}
    for cfg in cfgs[1:]:
        other = {k: v for k, v in asdict(cfg).items() if k not in PER_SEED}
        differ = sorted(k for k in first if first[k] != other[k])
        if differ:
            raise InputError(
                f"{model_name(cfg)} differs from {model_name(cfgs[0])} in {', '.join(differ)}; "
                "one process trains seeds of one arm (train the others in their own)"
            )


def _stacked_step(runs: list[_Run], tokens: list[torch.Tensor]) -> list[float]:
    """Forward and backward of every run at once; each run's gradients land on its own
    parameters (views of the stacked gradient), ready for its clip and optimizer step."""
    params = [list(run.model.parameters()) for run in runs]
    stacked = [
        torch.stack([p[i].detach() for p in params]).requires_grad_() for i in range(len(params[0]))
    ]
    losses = stacked_losses(runs[0].model, stacked, torch.stack(tokens))
    for run in runs:
        run.opt.zero_grad(set_to_none=True)
    losses.sum().backward()
    for s, seed_params in enumerate(params):
        for p, w in zip(seed_params, stacked, strict=True):
            assert w.grad is not None  # stacked_losses uses every weight (it checks)
            p.grad = w.grad[s]
    return losses.tolist()


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """LlamaRMSNorm with a per-seed weight ``[seeds, d]`` over ``x [seeds, rows, d]``."""
    dtype = x.dtype
    x = x.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight[:, None, :] * x.to(dtype)


def _linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x [seeds, rows, in] @ weight[seeds, out, in]^T``: one batched matmul."""
    return torch.bmm(x, weight.transpose(1, 2))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def stacked_losses(
    template: LlamaForCausalLM, weights: list[torch.Tensor], tokens: torch.Tensor
) -> torch.Tensor:
    """Per-seed mean next-token losses ``[seeds]`` of a stack of zoo Llamas shaped like
    ``template`` (a ``LlamaForCausalLM``, tied looped layers allowed), with ``weights`` the
    seeds' parameters stacked in ``template.parameters()`` order (each ``[seeds, ...]``) and
    ``tokens [seeds, batch, seq]`` each seed's batch. The same computation as the model's own
    forward with ``labels=tokens`` (RMSNorm, rotary embedding, causal SDPA, SwiGLU MLP,
    untied unembedding), each seed on its own weights."""
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    index = {id(p): i for i, p in enumerate(template.parameters())}
    config, core = template.config, template.model
    eps, heads = config.rms_norm_eps, config.num_attention_heads
    seeds, batch, seq = tokens.shape
    embed = weights[index[id(core.embed_tokens.weight)]]
    vocab, d = embed.shape[1:]
    head_dim = d // heads
    offsets = torch.arange(seeds, device=tokens.device)[:, None, None] * vocab
    x = F.embedding(tokens + offsets, embed.reshape(seeds * vocab, d)).reshape(seeds, -1, d)
    positions = torch.arange(seq, device=tokens.device)[None]
    cos, sin = core.rotary_emb(x, positions)  # [1, seq, head_dim]
    cos, sin = cos[:, None, None], sin[:, None, None]  # against [seeds, batch, heads, seq, hd]
    covered = {index[id(core.embed_tokens.weight)], index[id(core.norm.weight)]}
    covered.add(index[id(template.lm_head.weight)])

    def split(h: torch.Tensor) -> torch.Tensor:  # [seeds, batch*seq, d] -> per head
        return h.view(seeds, batch, seq, heads, head_dim).transpose(2, 3)

    for layer in decoder_layers(template):
        if not isinstance(layer, LlamaDecoderLayer):
            raise InputError(f"stacked_losses: a {type(layer).__name__} is not a zoo Llama layer")
        attn, mlp = layer.self_attn, layer.mlp
        named = (layer.input_layernorm, attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj)
        named += (layer.post_attention_layernorm, mlp.gate_proj, mlp.up_proj, mlp.down_proj)
        ids = [index[id(m.weight)] for m in named]
        covered.update(ids)
        ln1, wq, wk, wv, wo, ln2, gate, up, down = (weights[i] for i in ids)
        h = _rms(x, ln1, eps)
        q, k, v = split(_linear(h, wq)), split(_linear(h, wk)), split(_linear(h, wv))
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        q, k, v = (t.reshape(seeds * batch, heads, seq, head_dim) for t in (q, k, v))
        mixed = F.scaled_dot_product_attention(
            q,
            k,
            v,
            is_causal=True,
            scale=head_dim**-0.5,
        )
        mixed = mixed.view(seeds, batch, heads, seq, head_dim).transpose(2, 3)
        x = x + _linear(mixed.reshape(seeds, batch * seq, d), wo)
        h = _rms(x, ln2, eps)
        x = x + _linear(F.silu(_linear(h, gate)) * _linear(h, up), down)
    if len(covered) != len(index):
        raise InputError("stacked_losses: the model has parameters a zoo Llama does not")
    h = _rms(x, weights[index[id(core.norm.weight)]], eps)
    logits = _linear(h, weights[index[id(template.lm_head.weight)]])
    logits = logits.view(seeds, batch, seq, vocab)[:, :, :-1].float()
    losses = F.cross_entropy(
        logits.reshape(-1, vocab), tokens[:, :, 1:].reshape(-1), reduction="none"
    )
    return losses.view(seeds, -1).mean(dim=1)
