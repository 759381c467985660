"""The first zoo's trainer (a record): the shipped ``dense``/``grown``/``looped`` models and
``grown12``, dense, LIDAS-grown and looped at the same effective depth and token budget.

- ``dense``: 8 layers from the start.
- ``grown``: one 4-layer block (the LIDAS start), grown by LIDAS (block 4) to 8 layers,
  ``abcd -> ab abcd cd``; one growth event per entry of ``grow_at`` (two give 12 layers,
  ``ab ab abcd cd cd``, each initial layer in three copies). Growth waits until the
  initial network has formed an induction head (copying layers before any head exists gave
  nothing), at the earliest at ``grow_at[0]`` of the steps; when formation delays it, the
  later events keep their planned distance from the first (stage ``i`` at
  ``max(grow_at[i] * steps, first + (grow_at[i] - grow_at[0]) * steps)``) so that every
  stage trains before the next copies it. ``depth`` should equal
  ``initial_depth + grow_block * len(grow_at)``: it is the dense model the FLOPs are compared
  with.
- ``looped``: a 2-layer block run 4 times (shared weights).

Induction heads are measured every ``eval_every`` steps (the max over heads of the stripe score
of docs/research.md at repeat length ``formed_distance``). Until it passes ``formed_threshold``
the data is mostly repeated random spans of at most ``span_before`` tokens, which shortens the
plateau (measured: a 2-layer model on the full mix had not formed heads after 1,500 steps);
after it, the full task mix with repeats up to ``span_after`` tokens, and the learning rate
decays. Training runs for ``steps`` steps and, if no head has formed by then, continues up to
``max_steps`` (reported in the card either way).
Everything random takes the model seed; with the same seed and thread count, CPU training gives
the same weights.

These are the shipped record models' families (their cards name them), kept loadable and
retrainable. Its growth waits for a measured head, which the source's protocol does not: the
zoo the replication measures is trained by :mod:`induction.training.protocol` (growth, data
phases and learning rate on a schedule set in advance, one data stream for every family,
checkpoints, resume). :mod:`induction.training.train` dispatches a config to either; see
docs/zoo.md.
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from induction.models.layers import decoder_layers
from induction.models.looped import LoopPlan, tie_layers, untie_to_stored
from induction.progress import progress as progress_reporter
from induction.training.model import (
    build_model,
    induction_head_scores,
    matmul_flops_per_token,
    progress_label,
    zoo_model_name,
)
from induction.zoo import vocab as V
from induction.zoo.corpus import CorpusConfig, make_batch
from lineage.growth import duplicate_layers, lidas_span
from lineage.log import DuplicationLog

FAMILIES = ("dense", "grown", "looped")
#: Shipped zoo families that are presets of a training family (ZooTrainConfig overrides).
#: ``grown12``: two LIDAS stages, 4 -> 8 -> 12 layers, with 600 more steps so the last stage
#: trains about as long after its growth as ``grown`` does after its one.
VARIANTS: dict[str, dict] = {
    "grown12": {
        "family": "grown",
        "depth": 12,
        "grow_at": (0.25, 0.5),
        "steps": 2200,
        "max_steps": 4400,
    },
}
INITIAL_DIR = "initial"  # grown models: the pre-growth checkpoint, inside the model folder
STAGE_DIR = "stage{k}"  # grown models with several events: the network just before event k+1


@dataclass
class ZooTrainConfig:
    family: str = "dense"
    seed: int = 0
    depth: int = 8
    d_model: int = 64
    n_heads: int = 4
    d_mlp: int = 256
    seq_len: int = 96
    # Before heads form: short sequences. Sparse attention emerges after a plateau that grows
    # with the number of positions attended over (Zucchet et al. 2025), so short contexts
    # shorten it; after formation, full-length sequences and longer repeats.
    seq_len_before: int = 96
    batch: int = 32
    lr: float = 1e-3
    init_std: float = 0.02
    warmup: int = 50
    weight_decay: float = 0.0
    steps: int = 1600
    max_steps: int = 3000
    eval_every: int = 50
    formed_threshold: float = 0.4
    formed_distance: int = 16  # repeat length of the formation check (fits seq_len_before)
    span_before: int = 18
    span_after: int = 40
    grow_at: tuple[float, ...] = (0.4,)
    grow_block: int = 4
    initial_depth: int = 4
    loop_block: int = 2
    optimizer_state: Literal["reset", "copy"] = "reset"
    threads: int = 1
    repeat_len: int = 32  # the detector's default repeat length for zoo models
    corpus: dict = field(default_factory=lambda: asdict(CorpusConfig()))
    # Mix before induction heads form: mostly repeated spans, which shortens the plateau.
    mix_before: dict = field(
        default_factory=lambda: {
            "copy": 0.8,
            "lookup": 0.05,
            "varassign": 0.05,
            "regbench": 0.05,
            "bigram": 0.05,
        }
    )


def _lr(step: int, cfg: ZooTrainConfig, formed_at: int | None) -> float:
    """Warmup, constant until heads form, then cosine decay to 10% at ``cfg.steps``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    if formed_at is None or step >= cfg.steps:
        return cfg.lr if formed_at is None else 0.1 * cfg.lr
    progress = (step - formed_at) / max(1, cfg.steps - formed_at)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_first_zoo(
    cfg: ZooTrainConfig, out: Path | None = None, progress: bool = True
) -> tuple[object, dict]:
    """Train one first-zoo model; returns ``(model, card)`` where the model is the tied looped
    model for the looped family. If ``out`` is given, writes the checkpoint folder there."""
    if cfg.family not in FAMILIES:
        from induction.errors import InputError

        raise InputError(f"unknown zoo family {cfg.family!r}; use one of {', '.join(FAMILIES)}")
    if cfg.family == "grown" and cfg.depth != cfg.initial_depth + cfg.grow_block * len(cfg.grow_at):
        from induction.errors import InputError

        raise InputError(
            f"a grown model with {len(cfg.grow_at)} growth event(s) ends at "
            f"{cfg.initial_depth + cfg.grow_block * len(cfg.grow_at)} layers, not depth "
            f"{cfg.depth}; set depth to match"
        )
    torch.set_num_threads(cfg.threads)
    rng = np.random.default_rng(cfg.seed)
    corpus = CorpusConfig(
        **{
            **cfg.corpus,
            "seq_len": cfg.seq_len_before,
            "max_span": cfg.span_before,
            "mix": cfg.mix_before,
        }
    )

    log, plan = None, None
    # (network, step) as each growth event found it: [0] the initial network, [k] stage k
    pre_growth: list[tuple[object, int]] = []
    if cfg.family == "dense":
        model = build_model(cfg, cfg.depth)
    elif cfg.family == "grown":
        model = build_model(cfg, cfg.initial_depth)
        log = DuplicationLog(initial_depth=cfg.initial_depth)
    else:
        plan = LoopPlan(block=cfg.loop_block, loops=cfg.depth // cfg.loop_block)
        model = tie_layers(build_model(cfg, plan.stored_layers), plan)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay
    )

    history, flops, dense_flops, n_tokens, formed_at, step = [], 0.0, 0.0, 0, None, 0
    grow_steps = [int(f * cfg.steps) for f in cfg.grow_at]
    start = time.time()
    # the progress row: the name, the last measured loss and score, the start of the rate
    name, shown_loss, shown_score, t0 = zoo_model_name(cfg), None, None, time.monotonic()
    with progress_reporter(progress) as reporter:
        advance = reporter.task(cfg.steps, name)
        while True:
            depth = len(decoder_layers(model))
            done = step >= cfg.steps and (formed_at is not None or step >= cfg.max_steps)
            if done:
                break
            if (
                log is not None
                and len(log.events) < len(grow_steps)
                and step >= _growth_step(grow_steps, log)
                and formed_at is not None
            ):
                pre_growth.append((copy.deepcopy(model), step))
                block = min(cfg.grow_block, depth)
                source, insert_at = lidas_span(depth, block)
                _, opt = duplicate_layers(
                    model,
                    source,
                    insert_at,
                    log=log,
                    step=step,
                    operator="lidas",
                    optimizer=opt,
                    optimizer_state=cfg.optimizer_state,
                )
                depth = len(decoder_layers(model))
            for group in opt.param_groups:
                group["lr"] = _lr(step, cfg, formed_at)
            tokens = torch.from_numpy(make_batch(rng, corpus, cfg.batch))
            loss = model(tokens, labels=tokens).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            flops += matmul_flops_per_token(cfg, depth, tokens.shape[1]) * tokens.numel()
            dense_flops += matmul_flops_per_token(cfg, cfg.depth, tokens.shape[1]) * tokens.numel()
            n_tokens += tokens.numel()
            step += 1
            if step % cfg.eval_every == 0 or step == cfg.steps:
                score = float(induction_head_scores(model, cfg.formed_distance).max())
                history.append(
                    {
                        "step": step,
                        "loss": round(loss.item(), 4),
                        "score": round(score, 4),
                        "depth": depth,
                    }
                )
                if formed_at is None and score >= cfg.formed_threshold:
                    formed_at = step
                    corpus.max_span = cfg.span_after
                    corpus.seq_len = cfg.seq_len
                    corpus.mix = dict(cfg.corpus["mix"])
                shown_loss, shown_score = loss.item(), score
            if step == cfg.steps + 1:  # the planned steps are done, no head has formed yet
                name = f"{name} past {cfg.steps} steps, no head yet"
                advance = reporter.task(cfg.max_steps - cfg.steps, name)
            seconds = time.monotonic() - t0
            advance.describe(progress_label(name, depth, step, seconds, shown_loss, shown_score))
            advance()
    elapsed = time.time() - start

    card = {
        "name": zoo_model_name(cfg),
        "family": cfg.family,
        "seed": cfg.seed,
        "effective_depth": len(decoder_layers(model)),
        "steps": step,
        "tokens": n_tokens,
        "formed_at_step": formed_at,
        "train_seconds": round(elapsed, 1),
        "train_threads": cfg.threads,
        "train_flops": flops,
        "dense_equivalent_flops": dense_flops,
        "repeat_len": cfg.repeat_len,
        "config": asdict(cfg),
        "history": history,
    }
    card["flops_vs_dense"] = round(card["train_flops"] / card["dense_equivalent_flops"], 3)
    for dist in (20, cfg.repeat_len, 50):
        s = induction_head_scores(model, dist, batch=32, seed=12345)
        card[f"max_induction_d{dist}"] = round(float(s.max()), 4)
        if dist == cfg.repeat_len:
            card[f"heads_above_0.4_d{dist}"] = int((s >= 0.4).sum())
    if pre_growth:
        card["initial_checkpoint"] = INITIAL_DIR
        card["initial_step"] = pre_growth[0][1]
    if len(pre_growth) > 1:
        card["stage_checkpoints"] = {
            str(k): {"folder": _pre_growth_dir(k), "step": st}
            for k, (_, st) in enumerate(pre_growth[1:], start=1)
        }
    if out is not None:
        save_zoo_model(model, Path(out), card, log=log, plan=plan)
        for k, (net, st) in enumerate(pre_growth):
            _save_pre_growth(net, Path(out) / _pre_growth_dir(k), cfg, stage=k, step=st)
    return model, card


def _growth_step(planned: list[int], log: DuplicationLog) -> int:
    """Earliest step of the next growth event: as planned, but never closer to the first
    (actual) event than planned, so a late first growth shifts the later stages."""
    i = len(log.events)
    if i == 0:
        return planned[0]
    return max(planned[i], log.events[0].step + planned[i] - planned[0])


def _pre_growth_dir(stage: int) -> str:
    return INITIAL_DIR if stage == 0 else STAGE_DIR.format(k=stage)


def _save_pre_growth(model, folder: Path, cfg: ZooTrainConfig, stage: int, step: int) -> None:
    """A network as a growth event found it, so lineage can ask whether an ancestor head was
    already an induction head before it was copied (``stage`` 0: the initial network)."""
    card: dict = {"name": "initial network" if stage == 0 else f"stage-{stage} network"}
    if stage:
        card["stage"] = stage
    card.update(step=step, depth=len(decoder_layers(model)))
    if stage == 0:
        # Before growth the repeats were at most span_before tokens: its heads are measured at
        # the formation check's repeat length, which it declares as its own default.
        card["repeat_len"] = cfg.formed_distance
        distances = (cfg.formed_distance, cfg.repeat_len)
    else:  # later stages trained on the full mix
        card["repeat_len"] = cfg.repeat_len
        distances = (cfg.repeat_len,)
    for dist in distances:
        scores = induction_head_scores(model, dist, batch=32, seed=12345)
        card[f"max_induction_d{dist}"] = round(float(scores.max()), 4)
    save_zoo_model(model, folder, card)


def save_zoo_model(
    model, folder: Path, card: dict, log: DuplicationLog | None = None, plan: LoopPlan | None = None
) -> None:
    """Write a zoo checkpoint folder: safetensors weights, tokenizer, card, log or loop plan.
    A looped model stores its block once (shared tensors cannot be saved as such)."""
    folder.mkdir(parents=True, exist_ok=True)
    to_save = untie_to_stored(model, plan) if plan is not None else model
    to_save.config.use_cache = True
    to_save.save_pretrained(str(folder), safe_serialization=True)
    V.save_tokenizer(folder)
    if log is not None:
        log.save(folder / "duplication_log.json")
    if plan is not None:
        plan.save(folder)
    (folder / "card.json").write_text(json.dumps(card, indent=1) + "\n")
