"""The zoo's fixed protocol: every family on one schedule and one data stream, set in advance.

The source grows on a fixed schedule (docs/research.md, "Designing an experiment that can
fail"); the first zoo (``dense``/``grown``/``looped`` in :mod:`induction.training.train`) waited
for a measured
induction head before growing, switching the data mix and decaying the learning rate, so its
families trained on different schedules and "growth keeps the heads" was partly built in. Here
nothing waits for a measurement (docs/zoo.md):

- **Schedule.** ``steps`` updates; a linear warm-up of ``warmup`` steps, then cosine (or
  linear) decay to ``lr_min_ratio * lr`` at the last step. Data phases start at fixed fractions
  of the steps (by default a copy-heavy warm-up curriculum of short repeats for the first
  quarter, then the full mix). Induction scores are measured every ``eval_every`` steps and
  logged; they decide nothing.
- **Data.** The batch of step ``t`` is drawn from ``np.random.default_rng([data_seed, t])``,
  independent of the model seed's initialisation and of the model: every family trained with
  one data seed sees the same batches, in the same order, for the same token count.
- **Families.** ``dense``; ``lidas``: one 4-layer block grown by LIDAS (Kapl et al. 2025,
  arXiv 2512.08819) in blocks of ``grow_block`` layers to ``depth``, the growth steps at the
  Prop-alpha stage boundaries of MIDAS (Saunshi et al. 2024: stage ``i`` of ``k`` gets a share
  ``i^alpha / sum_j j^alpha`` of the steps); ``looped``: a ``loop_block``-layer block run
  ``loops`` times (Saunshi et al. 2025, arXiv 2502.17416).
- **Checkpoints** at log-spaced steps and just before and after each growth event, each a
  loadable model folder under ``<out>/checkpoints/step-<N>/`` (``step-<N>-pre``: the network a
  growth event copied), written atomically; the latest holds the training state
  (``training_state.pt``: fp32 weights, optimizer, RNG, step, counters), from which
  :func:`train_fixed` with ``resume=True`` continues bit-identically on CPU.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
from torch import nn

from induction.errors import InputError, LineageError, one_line
from induction.models.layers import decoder_layers
from induction.models.looped import LoopPlan, tie_layers, untie_to_stored
from induction.progress import Advance, Progress
from induction.progress import progress as progress_reporter
from induction.store.io import disk_full
from induction.training.model import (
    build_model,
    induction_head_scores,
    matmul_flops_per_token,
    progress_label,
)
from induction.zoo import corpus as C
from induction.zoo import vocab as V
from induction.zoo.probe import probe
from lineage.growth import PRESETS as GROWTH_PRESETS
from lineage.growth import duplicate_layers
from lineage.log import DuplicationLog

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM

PROTOCOL = "fixed"
FAMILIES = ("dense", "lidas", "looped")
CHECKPOINTS = "checkpoints"
TRAIN_STATE = "training_state.pt"
TRAIN_CONFIG = "train_config.json"
TRAIN_LOG = "train_log.jsonl"
PROBE_FIELDS = ("lookup", "varassign", "position_gap")

#: Warm-up curriculum: mostly repeated random spans of at most 18 tokens, which shortens the
#: plateau before induction heads form (Zucchet et al. 2025); then the full mix.
WARMUP_MIX = {"copy": 0.8, "lookup": 0.05, "varassign": 0.05, "regbench": 0.05, "bigram": 0.05}
#: The full mix: the first zoo's weights x 0.85 plus 15% statements of the fixed world's facts
#: (``induction.zoo.world``), which the zoo19 closed-book tasks ask in formats never trained.
MAIN_MIX = dict(C.MIX_V2)


def default_phases() -> list[dict]:
    """Data phases: ``at`` (fraction of the steps where the phase starts), ``mix`` (segment
    kind -> weight, any kind of ``induction.zoo.corpus.KINDS``), ``seq_len``, ``max_span``.
    Optional ``gate`` (:func:`gate_opens`): the phase may start earlier, at the first probe
    whose ``gate["probe"]`` field reaches ``gate["min"]``; ``at`` is then its latest start."""
    return [
        {"at": 0.0, "mix": dict(WARMUP_MIX), "seq_len": 96, "max_span": 18},
        {"at": 0.25, "mix": dict(MAIN_MIX), "seq_len": 96, "max_span": 40},
    ]


@dataclass
class FixedTrainConfig:
    """One model of the fixed protocol. ``depth`` is the effective depth at the end of
    training (a looped model: ``loop_block * loops``); ``reference_depth`` the dense model
    its FLOPs and stored parameters are compared with."""

    preset: str = "dense8"
    family: str = "dense"
    protocol: str = PROTOCOL
    seed: int = 0  # model initialisation
    data_seed: int | None = None  # None: the model seed
    depth: int = 8
    reference_depth: int = 8
    d_model: int = 64
    n_heads: int = 8
    d_mlp: int = 256
    init_std: float = 0.02
    batch: int = 32
    steps: int = 3000
    lr: float = 1e-3
    lr_schedule: str = "cosine"  # or "linear"
    lr_min_ratio: float = 0.1
    warmup: int = 50
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    phases: list[dict] = field(default_factory=default_phases)
    corpus: dict = field(default_factory=dict)  # further CorpusConfig fields (min_span, ...)
    # lidas
    initial_depth: int = 4
    grow_block: int = 4
    grow_operator: str = "lidas"  # or "midas" (lineage.growth presets)
    alpha: float = 1.0  # Prop-alpha stage lengths
    grow_at: list[float] | None = None  # explicit growth fractions instead of Prop-alpha
    optimizer_state: Literal["reset", "copy"] = "reset"  # optimizer state of copied layers
    # looped
    loop_block: int = 2
    loops: int = 4
    # measurement (logged, decides nothing)
    eval_every: int = 50
    eval_distance: int = 16
    # in-context probe (``induction.zoo.probe``) every this many steps, 0: never; logged only
    probe_every: int = 0
    repeat_len: int = 32
    # checkpoints: 0, then first_checkpoint * 2^k, plus growth events, plus the last step.
    # 50 keeps a 3000-step dense8 series (7 float16 checkpoints + the float32 model) < 10 MB
    first_checkpoint: int = 50
    checkpoint_dtype: str = "float16"  # intermediate checkpoints; the final model is float32
    keep_train_state: str = "last"  # "last": only the latest checkpoint can be resumed; "all"
    # a bare resume point (training state only, ``checkpoints/state-<N>/``) every this many
    # steps, so a run stopped between log-spaced checkpoints loses at most this much work
    state_every: int = 250
    threads: int = 1
    # where the updates run: "cpu" (bit-identical reruns and resumes) or "cuda" (the same
    # recipe, float rounding differs and reruns are not bit-identical: docs/zoo.md, "Training
    # on a GPU"). Initialisation and data are drawn on the CPU either way.
    device: str = "cpu"

    @property
    def seq_len(self) -> int:
        """The longest sequence of any phase (FLOP accounting default)."""
        return max(p["seq_len"] for p in self.phases)

    @property
    def stream_seed(self) -> int:
        return self.seed if self.data_seed is None else self.data_seed

    @classmethod
    def from_json(cls, data: dict) -> FixedTrainConfig:
        """The config a run folder recorded; a value of the wrong type (an edited or damaged
        ``train_config.json``) is refused in one line rather than failing mid-training."""
        known = {f.name: f for f in fields(cls)}
        for name, value in data.items():
            f = known.get(name)
            default = f.default if f is not None else MISSING
            kind = type(default)
            if default is MISSING or default is None or kind not in (int, float, str, bool):
                continue
            ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
            ok = ok or (kind is float and isinstance(value, int) and not isinstance(value, bool))
            if not ok:
                raise InputError(
                    f"{TRAIN_CONFIG}: {name} is {value!r}, not a {kind.__name__}; restore the "
                    "run's training config"
                )
        return cls(**{k: v for k, v in data.items() if k in known})


#: The second zoo's data (docs/zoo.md, "The second zoo"): the first zoo's copy-heavy warm-up for
#: a quarter of the steps, then more in-context data than MIX_V2 (lookup, variable assignment)
#: with the facts closed-book QA asks. Chosen by the pilot (benchmarks/zoo_pilot.py).
ICL_MIX = {
    "copy": 0.3,
    "lookup": 0.25,
    "varassign": 0.15,
    "regbench": 0.1,
    "bigram": 0.05,
    "facts": 0.15,
}


def icl_phases() -> list[dict]:
    return [
        {"at": 0.0, "mix": dict(WARMUP_MIX), "seq_len": 96, "max_span": 18},
        {"at": 0.25, "mix": dict(ICL_MIX), "seq_len": 96, "max_span": 40},
    ]


#: The second zoo's data after the warm-up: :data:`ICL_MIX` with variable assignment's share
#: doubled (lookup, learnt within 500 steps under ICL_MIX, and regbench give it up). Under
#: ICL_MIX variable assignment was learnt by some seeds (d8-rec 0.70, m8-s1 0.92) and not by
#: others (grown8c-s0 0.33, and 6,000 steps did not help: g8-6k); the pilot g8-va, grown8c's
#: recipe at seed 0 with this mix, learnt it (docs/zoo.md, "The third session").
ICL_VA_MIX = {
    "copy": 0.25,
    "lookup": 0.2,
    "varassign": 0.3,
    "regbench": 0.05,
    "bigram": 0.05,
    "facts": 0.15,
}


def _icl_phases_with(mix: dict[str, float]) -> list[dict]:
    """:func:`icl_phases` with ``mix`` after the warm-up."""
    phases = icl_phases()
    phases[1]["mix"] = dict(mix)
    return phases


def icl_va_phases() -> list[dict]:
    return _icl_phases_with(ICL_VA_MIX)


#: The function-vector zoo's data after the warm-up: :data:`ICL_VA_MIX` with a tenth of the
#: sequences given to ``pairs`` (the world's facts as ``entity value .`` without the relation
#: word), taken from ``copy`` and ``facts``. The second zoo states facts only with their
#: relation word and does the ``zoofacts`` pair tasks at chance, so its FV scores are noise
#: (docs/results.md); these models are trained to pick a relation from demonstrations.
ICL_FV_MIX = {
    "copy": 0.2,
    "lookup": 0.2,
    "varassign": 0.3,
    "regbench": 0.05,
    "bigram": 0.05,
    "facts": 0.1,
    "pairs": 0.1,
}


def icl_fv_phases() -> list[dict]:
    return _icl_phases_with(ICL_FV_MIX)


def r4_phases() -> list[dict]:
    """Round 4 (docs/replication.md, rule R4): the copy-heavy warm-up, then
    :data:`induction.zoo.corpus.MIX_R4`, every ``zoo4g`` group in its own format."""
    return _icl_phases_with(C.MIX_R4)


#: Named data curricula a preset refers to (a fresh list per config).
CURRICULA = {
    "icl": icl_phases,
    "icl-va": icl_va_phases,
    "icl-fv": icl_fv_phases,
    "r4": r4_phases,
}


#: The 12-layer zoo (a record): dense12-s0 and lidas12-s0 were trained on it and left variable
#: assignment at chance, as did the pilot's d12-va, where the 8-layer d8-rec learnt it.
TWELVE_LAYER_ZOO = {
    "depth": 12,
    "reference_depth": 12,
    "steps": 6000,
    "lr": 3e-3,
    "warmup": 100,
    "phases": "icl",  # icl_phases(), filled per config
    "probe_every": 250,
}
#: LIDAS in four stages of 2 layers from one 4-layer block (abcd -> abbccd -> ... -> 12 layers):
#: the initial layers b and c end with 5 copies each. ``lidas12``: the first stage lasts 30% of
#: the steps, then a growth every 15%; ``lidas12e``: Prop-1 stage lengths (Saunshi et al.
#: 2024), the first growth at 1/15 of the steps, before any head forms.
LATE_GROWTH = [0.3, 0.45, 0.6, 0.75]
#: The second zoo, fixed in advance from the pilot (docs/zoo.md, "The pilot"): d8-rec's recipe
#: (8 layers, 4,000 steps of the in-context curriculum at lr 3e-3) with variable assignment's
#: share doubled after the warm-up (ICL_VA_MIX; the pilot's third session).
SECOND_ZOO = {
    "depth": 8,
    "reference_depth": 8,
    "steps": 4000,
    "lr": 3e-3,
    "warmup": 100,
    "phases": "icl-va",  # icl_va_phases(), filled per config
    "probe_every": 250,
}
#: Growth of the second zoo: from the 4-layer network in four one-layer stages, each copying
#: the middle layer (MIDAS with b = 1, the layer before the midpoint at an even depth, the
#: centre at an odd one: abcd -> abbcd -> ... -> abbbbbcd). LIDAS's centred block must be even,
#: and with 2-layer blocks an 8-layer model gives each ancestor at most 3 copies; one layer at
#: a time gives b 5, so "10 of the 12 strongest heads from 2 ancestors" is reachable (fewest
#: possible m = ceil(10 / 5) = 2).
STAGED_GROWTH = {"initial_depth": 4, "grow_block": 1, "grow_operator": "midas"}
#: The fixed-protocol presets (docs/zoo.md). All: d_model 64, 8 heads of 8 dims, 3000 steps
#: of 32 x 96 tokens, one data stream per seed.
PRESETS: dict[str, dict] = {
    "dense8": {"family": "dense", "depth": 8},
    # one 4-layer block, LIDAS block 4 at the Prop-1 boundary (1/3 of the steps): 4 -> 8
    "lidas8": {"family": "lidas", "depth": 8, "initial_depth": 4, "alpha": 1.0},
    # FLOP-matched: a 2-layer block run 4 times, effective depth 8
    "looped8": {"family": "looped", "depth": 8, "loop_block": 2, "loops": 4},
    # parameter-matched: dense8's 8 layers stored, run twice (effective depth 16, 2x FLOPs);
    # same width and heads as dense8, so heads are comparable one to one
    "looped8p": {"family": "looped", "depth": 16, "loop_block": 8, "loops": 2},
    # the 12-layer zoo (TWELVE_LAYER_ZOO, a record: its recipe does not teach variable
    # assignment at 12 layers)
    "dense12": {"family": "dense", **TWELVE_LAYER_ZOO},
    "lidas12": {
        "family": "lidas",
        **TWELVE_LAYER_ZOO,
        "initial_depth": 4,
        "grow_block": 2,
        "grow_at": LATE_GROWTH,
    },
    "lidas12e": {
        "family": "lidas",
        **TWELVE_LAYER_ZOO,
        "initial_depth": 4,
        "grow_block": 2,
        "alpha": 1.0,
    },
    # FLOP-matched: a 4-layer block run 3 times; parameter-matched: 12 layers run twice
    "looped12": {"family": "looped", **TWELVE_LAYER_ZOO, "depth": 12, "loop_block": 4, "loops": 3},
    "looped12p": {
        "family": "looped",
        **TWELVE_LAYER_ZOO,
        "depth": 24,
        "loop_block": 12,
        "loops": 2,
    },
    # the second zoo (SECOND_ZOO): 8 layers on the pilot's recipe. grown8c: staged growth with
    # the first growth at 30% of the steps, after the 4-layer network has formed induction
    # heads (the pilot's had 0.47 at step 750, 0.77 at 1,000); grown8ce: Prop-1 stage lengths,
    # the first growth at 1/15 of the steps (step 267), before any head forms
    "dense8c": {"family": "dense", **SECOND_ZOO},
    "grown8c": {"family": "lidas", **SECOND_ZOO, **STAGED_GROWTH, "grow_at": LATE_GROWTH},
    "grown8ce": {"family": "lidas", **SECOND_ZOO, **STAGED_GROWTH, "alpha": 1.0},
    # FLOP-matched: a 2-layer block run 4 times; parameter-matched: 8 layers run twice
    "looped8c": {"family": "looped", **SECOND_ZOO, "loop_block": 2, "loops": 4},
    "looped8cp": {"family": "looped", **SECOND_ZOO, "depth": 16, "loop_block": 8, "loops": 2},
    # the function-vector pair (issue #26, docs/zoo.md): the second zoo's dense and late-grown
    # recipes on ICL_FV_MIX, for FV heads over growth, lineage and training
    "dense8f": {"family": "dense", **SECOND_ZOO, "phases": "icl-fv"},
    "grown8f": {
        "family": "lidas",
        **SECOND_ZOO,
        **STAGED_GROWTH,
        "grow_at": LATE_GROWTH,
        "phases": "icl-fv",
    },
}


#: Round 4 (docs/replication.md, "Round 4"): the second zoo's recipe on the r4 curriculum at
#: the passing pilot's 12,000 steps, for the ``zoo4g`` suite. ``grown8r``/``grown8re`` grow as
#: ``grown8c``/``grown8ce`` (the middle layer; grown8r is the source-faithful arm);
#: ``grown8rt`` copies the *top* initial layer, where every seed so far formed its induction
#: heads, after they form (R4_LATE_GROWTH), so that layer ends with 5 copies; ``grown8rte`` is
#: its twin grown before heads form (Prop-1: its first copy at 1/15 of the steps).
ROUND4 = {**SECOND_ZOO, "phases": "r4", "steps": 12000}  # the recipe pilot's (R4-recipe, A10)
TOP_GROWTH = {"initial_depth": 4, "grow_block": 1, "grow_operator": "top"}
#: Round 4's late growth, from pilot 3a (docs/replication.md, "Pilot notes"): on the r4
#: curriculum the top layer's heads reach 0.4 (distance 32) between steps 1,200 and 1,600, so
#: the first copy waits for step 1,600 (40%), then one every 15% as LATE_GROWTH.
R4_LATE_GROWTH = [0.4, 0.55, 0.7, 0.85]
PRESETS |= {
    "dense8r": {"family": "dense", **ROUND4},
    "grown8r": {"family": "lidas", **ROUND4, **STAGED_GROWTH, "grow_at": R4_LATE_GROWTH},
    "grown8re": {"family": "lidas", **ROUND4, **STAGED_GROWTH, "alpha": 1.0},
    "grown8rt": {"family": "lidas", **ROUND4, **TOP_GROWTH, "grow_at": R4_LATE_GROWTH},
    "grown8rte": {"family": "lidas", **ROUND4, **TOP_GROWTH, "alpha": 1.0},
    "looped8r": {"family": "looped", **ROUND4, "loop_block": 2, "loops": 4},
    "looped8rp": {"family": "looped", **ROUND4, "depth": 16, "loop_block": 8, "loops": 2},
}


def preset_config(preset: str, seed: int = 0, **overrides) -> FixedTrainConfig:
    if preset not in PRESETS:
        raise InputError(
            f"unknown fixed-protocol preset {preset!r}; use one of {', '.join(PRESETS)}"
        )
    fields = {**PRESETS[preset], **overrides}
    if isinstance(fields.get("phases"), str):
        fields["phases"] = CURRICULA[fields["phases"]]()
    return FixedTrainConfig(preset=preset, seed=seed, **fields)


def model_name(cfg: FixedTrainConfig) -> str:
    return f"{cfg.preset}-s{cfg.seed}"


# ----------------------------------------------------------------------------- schedule
def growth_steps(cfg: FixedTrainConfig) -> list[int]:
    """Steps (updates done) at which each growth event happens; [] unless ``lidas``.

    Prop-alpha (Saunshi et al. 2024): ``k = (depth - initial_depth) / grow_block + 1`` stages,
    stage ``i`` lasts a share ``i^alpha / sum_j j^alpha`` of the steps; growth at the
    boundaries. ``grow_at`` (fractions) overrides it."""
    if cfg.family != "lidas":
        return []
    n_events = (cfg.depth - cfg.initial_depth) // cfg.grow_block
    if cfg.grow_at is not None:
        fractions = list(cfg.grow_at)
    else:
        shares = [(i + 1) ** cfg.alpha for i in range(n_events + 1)]
        fractions = list(np.cumsum(shares)[:-1] / sum(shares))
    return [round(f * cfg.steps) for f in fractions]


def phase_starts(cfg: FixedTrainConfig, opened: dict[str, int] | None = None) -> list[int]:
    """The step each data phase starts at: ``round(at * steps)``, or for a gated phase the step
    its gate opened (``opened``: phase index as text -> step, as the run's state records it)."""
    found: dict[str, int] = opened or {}
    starts: list[int] = [round(p["at"] * cfg.steps) for p in cfg.phases]
    return [min(found.get(str(i), at), at) for i, at in enumerate(starts)]


def phase_at(cfg: FixedTrainConfig, step: int, opened: dict[str, int] | None = None) -> dict:
    """The data phase of step ``step`` (phases start at :func:`phase_starts`)."""
    current = cfg.phases[0]
    for phase, start in zip(cfg.phases, phase_starts(cfg, opened), strict=True):
        if step >= start:
            current = phase
    return current


def gate_opens(
    cfg: FixedTrainConfig, step: int, found: dict[str, float], opened: dict[str, int]
) -> list[int]:
    """The gated phases a probe at ``step`` (updates done) opens: not yet started, the phase
    before them started, and the probe's field at or above the gate's ``min``. A gate waits
    for a skill in one pilot run; a recipe for several arms fixes the step it found instead,
    since data that depends on the model differs between arms (docs/replication.md, "Pilot
    7")."""
    starts = phase_starts(cfg, opened)
    return [
        i
        for i, phase in enumerate(cfg.phases)
        if "gate" in phase
        and step < starts[i]
        and step >= starts[i - 1]
        and found[phase["gate"]["probe"]] >= phase["gate"]["min"]
    ]


def has_gates(cfg: FixedTrainConfig) -> bool:
    return any("gate" in phase for phase in cfg.phases)


def batch_at(cfg: FixedTrainConfig, step: int, opened: dict[str, int] | None = None) -> np.ndarray:
    """The ``[batch, seq_len]`` tokens of step ``step``: a function of (data seed, step) and
    the schedule only, never of the model or its seed; with a gated phase, also of the step
    its gate opened (``opened``, see :func:`phase_starts`)."""
    phase = phase_at(cfg, step, opened)
    corpus = C.CorpusConfig(
        **{**cfg.corpus, "seq_len": phase["seq_len"], "max_span": phase["max_span"]},
        mix=dict(phase["mix"]),
    )
    return C.make_batch(np.random.default_rng([cfg.stream_seed, step]), corpus, cfg.batch)


def lr_at(cfg: FixedTrainConfig, step: int) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    if cfg.lr_schedule == "linear":
        factor = 1.0 - progress
    else:
        factor = 0.5 * (1 + math.cos(math.pi * progress))
    return cfg.lr * (cfg.lr_min_ratio + (1 - cfg.lr_min_ratio) * factor)


def checkpoint_steps(cfg: FixedTrainConfig) -> list[int]:
    """0, ``first_checkpoint * 2^k`` below ``steps`` (log-spaced); growth steps are added by
    the trainer (before and after the event); the last step is the model folder itself."""
    out, s = [0], cfg.first_checkpoint
    while s < cfg.steps:
        out.append(s)
        s *= 2
    return out


#: Range of each numeric field: (lowest, highest, whether the lowest is allowed).
_RANGES = {
    "seed": (0, 2**32 - 1, True),
    "depth": (1, 1024, True),
    "reference_depth": (1, 1024, True),
    "d_model": (1, 1 << 16, True),
    "n_heads": (1, 1024, True),
    "d_mlp": (1, 1 << 18, True),
    "init_std": (0, 10, False),
    "batch": (1, 1 << 16, True),
    "steps": (1, 10_000_000, True),
    "lr": (0, 10, False),
    "lr_min_ratio": (0, 1, True),
    "warmup": (0, 10_000_000, True),
    "weight_decay": (0, 10, True),
    "grad_clip": (0, 1e6, False),
    "initial_depth": (1, 1024, True),
    "grow_block": (1, 1024, True),
    "alpha": (0, 100, False),
    "loop_block": (1, 1024, True),
    "loops": (1, 1024, True),
    "eval_every": (1, 10_000_000, True),
    "eval_distance": (1, 1 << 16, True),
    "probe_every": (0, 10_000_000, True),
    "repeat_len": (1, 1 << 16, True),
    "first_checkpoint": (1, 10_000_000, True),
    "state_every": (0, 10_000_000, True),
    "threads": (1, 4096, True),
}


def _check_ranges(cfg: FixedTrainConfig) -> None:
    """Every numeric field finite and inside its range; phases well formed (one line each)."""
    for name, (low, high, closed) in _RANGES.items():
        value = getattr(cfg, name)
        ok = isinstance(value, int | float) and math.isfinite(value)
        ok = ok and (value >= low if closed else value > low) and value <= high
        if not ok:
            side = ">=" if closed else ">"
            raise InputError(
                f"training config: {name} is {value!r}; it must be {side} {low} and <= {high}"
            )
    if cfg.data_seed is not None and not (
        isinstance(cfg.data_seed, int) and 0 <= cfg.data_seed < 2**32
    ):
        raise InputError(f"training config: data_seed is {cfg.data_seed!r}; use 0..2**32-1")
    if cfg.checkpoint_dtype not in ("float16", "bfloat16", "float32"):
        raise InputError(
            f"training config: checkpoint_dtype is {cfg.checkpoint_dtype!r}; use float16, "
            "bfloat16 or float32"
        )
    if cfg.optimizer_state not in ("reset", "copy"):
        raise InputError(f"training config: optimizer_state is {cfg.optimizer_state!r}")
    if not isinstance(cfg.phases, list) or not all(isinstance(p, dict) for p in cfg.phases):
        raise InputError("training config: phases must be a list of objects")
    for phase in cfg.phases:
        at, seq, span, mix = (phase.get(k) for k in ("at", "seq_len", "max_span", "mix"))
        ok = isinstance(at, int | float) and math.isfinite(at) and 0 <= at < 1
        ok = ok and all(isinstance(v, int) and 2 <= v <= 1 << 16 for v in (seq, span))
        ok = ok and isinstance(mix, dict) and bool(mix)
        ok = ok and all(isinstance(w, int | float) and math.isfinite(w) and w >= 0
                        for w in (mix or {}).values())  # fmt: skip
        if not ok:
            raise InputError(
                f"training config: phase {phase!r} needs at in [0, 1), whole seq_len and "
                "max_span >= 2 and a mix of finite non-negative weights"
            )
        gate = phase.get("gate")
        if gate is not None and not (
            isinstance(gate, dict)
            and set(gate) == {"probe", "min"}
            and gate["probe"] in ("lookup", "varassign")
            and isinstance(gate["min"], int | float)
            and 0 < gate["min"] <= 1
        ):
            raise InputError(
                f"training config: phase gate {gate!r} needs probe (lookup or varassign) and "
                "min in (0, 1], e.g. {'probe': 'varassign', 'min': 0.4}"
            )
    if not isinstance(cfg.corpus, dict):
        raise InputError("training config: corpus must be an object")
    known = {f.name for f in fields(C.CorpusConfig)} - {"seq_len", "max_span", "mix"}
    unknown = sorted(set(cfg.corpus) - known)
    if unknown:
        raise InputError(
            f"training config: unknown corpus field(s) {unknown}; use {sorted(known)} (the "
            "phases set seq_len, max_span and mix)"
        )
    if not isinstance(cfg.corpus.get("math_recall", False), bool):
        raise InputError("training config: corpus math_recall must be true or false")


#: Fields added after runs were recorded whose default leaves the trained weights as they
#: were (where it trains, probes and bare resume points), so an older run folder may lack them.
_ADDED_LATER = ("device", "probe_every", "state_every")


def read_run_config(out: Path) -> FixedTrainConfig:
    """The config a run folder recorded, checked whole before any work: a JSON object with
    every field (a resume never fills a deleted value with a default), each of its type and
    range; ``checkpoints`` must be a folder. One :class:`InputError` line otherwise."""
    from induction.store.io import read_json

    path = out / TRAIN_CONFIG
    data = read_json(path, "training config")
    fix = f"restore {path} as the run wrote it, or train afresh"
    if not isinstance(data, dict):
        raise InputError(f"{path} holds a JSON {type(data).__name__}, not an object; {fix}")
    missing = [f.name for f in fields(FixedTrainConfig) if f.name not in data]
    missing = [name for name in missing if name not in _ADDED_LATER]
    if missing:
        raise InputError(f"{path} lacks {', '.join(missing)}; {fix}")
    cfg = FixedTrainConfig.from_json(data)
    try:
        validate(replace(cfg, device="cpu"))  # the device is checked after any --device
    except InputError as e:
        raise InputError(f"{path}: {e}; {fix}") from None
    ckpts = out / CHECKPOINTS
    if ckpts.exists() and not ckpts.is_dir():
        raise InputError(f"{ckpts} is not a folder; move it away to resume {out}")
    return cfg


def _identity(cfg: FixedTrainConfig) -> dict:
    """What a resume must find unchanged: the whole config but the device it may move to."""
    return {k: v for k, v in asdict(cfg).items() if k != "device"}


def validate(cfg: FixedTrainConfig) -> None:
    _check_ranges(cfg)
    if cfg.family not in FAMILIES:
        raise InputError(f"unknown family {cfg.family!r}; use one of {', '.join(FAMILIES)}")
    if cfg.family == "lidas":
        if cfg.grow_operator not in GROWTH_PRESETS:
            raise InputError(f"unknown growth operator {cfg.grow_operator!r}")
        extra = cfg.depth - cfg.initial_depth
        if extra <= 0 or extra % cfg.grow_block:
            raise InputError(
                f"lidas grows {cfg.initial_depth} layers in blocks of {cfg.grow_block}; "
                f"depth {cfg.depth} is not reachable"
            )
        if cfg.grow_at is not None and len(cfg.grow_at) != extra // cfg.grow_block:
            raise InputError(f"grow_at needs {extra // cfg.grow_block} fractions")
        steps = growth_steps(cfg)
        if steps != sorted(set(steps)) or not all(0 < s < cfg.steps for s in steps):
            raise InputError(f"growth steps {steps} must increase strictly inside (0, steps)")
    if cfg.family == "looped" and cfg.depth != cfg.loop_block * cfg.loops:
        raise InputError(
            f"a {cfg.loop_block}-layer block run {cfg.loops} times has depth "
            f"{cfg.loop_block * cfg.loops}, not {cfg.depth}"
        )
    if cfg.d_model % cfg.n_heads:
        raise InputError(f"d_model {cfg.d_model} is not divisible by {cfg.n_heads} heads")
    if not cfg.phases or cfg.phases[0]["at"] != 0:
        raise InputError("the first data phase must start at 0")
    if "gate" in cfg.phases[0]:
        raise InputError("the first data phase starts at 0 and cannot be gated; gate a later one")
    if has_gates(cfg) and not cfg.probe_every:
        raise InputError("a gated data phase opens on the probe; set probe_every (e.g. 250)")
    starts = phase_starts(cfg)
    if starts != sorted(starts):
        raise InputError(f"data phases must start in order; they start at steps {starts}")
    for phase in cfg.phases:
        unknown = set(phase["mix"]) - set(C.KINDS)
        if unknown:
            raise InputError(
                f"unknown segment kind(s) {sorted(unknown)} in a data mix; known: {C.KINDS}"
            )
    if cfg.lr_schedule not in ("cosine", "linear"):
        raise InputError(f"lr_schedule must be cosine or linear, not {cfg.lr_schedule!r}")
    if cfg.keep_train_state not in ("last", "all"):
        raise InputError("keep_train_state must be 'last' or 'all'")
    check_device(cfg.device)


def check_device(name: str) -> torch.device:
    """``name`` as a torch device this machine has, or a one-line :class:`InputError`."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise InputError(f"device {name!r} is not a torch device; use cpu or cuda") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InputError(
            f"device {name!r}: this machine has no CUDA GPU; train with device cpu (a run "
            "begun on a GPU resumes here with --device cpu)"
        )
    if device.type not in ("cpu", "cuda"):
        raise InputError(f"device {name!r}: the zoo trains on cpu or cuda")
    return device


def device_label(device: torch.device) -> str:
    """What the card records: ``cpu`` or the accelerator's name (``cuda: NVIDIA H200``)."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return device.type


# ----------------------------------------------------------------------------- accounting
def param_count(cfg: FixedTrainConfig, n_layers: int) -> int:
    """Stored parameters of a Llama with ``n_layers`` stored layers (untied embeddings, RMSNorm
    weights, no biases)."""
    d = cfg.d_model
    per_layer = 4 * d * d + 3 * d * cfg.d_mlp + 2 * d
    return 2 * V.VOCAB_SIZE * d + d + n_layers * per_layer


def stored_layers(cfg: FixedTrainConfig) -> int:
    return cfg.loop_block if cfg.family == "looped" else cfg.depth


# ----------------------------------------------------------------------------- training
def _initial_model(
    cfg: FixedTrainConfig,
) -> tuple[LlamaForCausalLM, DuplicationLog | None, LoopPlan | None]:
    log, plan = None, None
    if cfg.family == "dense":
        model = build_model(cfg, cfg.depth)
    elif cfg.family == "lidas":
        model = build_model(cfg, cfg.initial_depth)
        log = DuplicationLog(initial_depth=cfg.initial_depth)
    else:
        plan = LoopPlan(block=cfg.loop_block, loops=cfg.loops)
        model = tie_layers(build_model(cfg, plan.stored_layers), plan)
    return model, log, plan


def _optimizer(
    cfg: FixedTrainConfig, model: nn.Module, device: torch.device
) -> torch.optim.Optimizer:
    """``model`` moved to its training device, then AdamW over its parameters."""
    model.to(device)  # in place; called on a Module: transformers wraps ``to`` past type checkers
    return torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay
    )


@dataclass
class _State:
    step: int = 0
    tokens: int = 0
    flops: float = 0.0
    dense_flops: float = 0.0
    seconds: float = 0.0
    data_sha256: str = ""  # hash chain over every batch trained on
    history: list = field(default_factory=list)
    checkpoints: list = field(default_factory=list)
    devices: list = field(default_factory=list)  # device_label of each device trained on
    seeds_per_process: list = field(default_factory=list)  # seeds batched together, per leg
    # gated data phases opened: phase index (text) -> the step it starts at
    phases_opened: dict = field(default_factory=dict)


def train_fixed(
    cfg: FixedTrainConfig | None,
    out: Path | None = None,
    progress: bool = True,
    resume: bool = False,
    stop_at: int | None = None,
    device: str | None = None,
) -> tuple[object, dict]:
    """Train one fixed-protocol model; returns ``(model, card)`` (the tied model for looped
    families). With ``out``, writes checkpoints under ``out/checkpoints`` as it goes, a per-step
    log ``out/train_log.jsonl`` and, at the end, the model folder itself (``card.json`` last).
    ``resume``: continue from the latest checkpoint in ``out`` that holds a training state (the
    config is read from ``out/train_config.json``). ``stop_at``: return after that many steps
    without writing the final model (for tests of resuming). ``device``: train there instead of
    at ``cfg.device`` (a resumed run otherwise keeps the device it recorded); the card's
    ``train_device`` names every device the run used, in order. Several seeds in one batched
    process: :func:`induction.training.multiseed.train_seeds`."""
    run = _Run(cfg, out, resume, device, progress)
    return train_runs([run], _model_step, stop_at)[0]


def _model_step(runs: list[_Run], tokens: list[torch.Tensor]) -> list[float]:
    """One seed's forward and backward through its own model (the single-seed recipe)."""
    (run,), (batch,) = runs, tokens
    loss = run.model(batch, labels=batch).loss
    run.opt.zero_grad(set_to_none=True)
    loss.backward()
    return [loss.item()]


def train_runs(
    runs: list[_Run], step_fn, stop_at: int | None = None, draw=None
) -> list[tuple[object, dict]]:
    """Train ``runs`` to their last step together: at each step the runs that have reached it
    (a resumed seed behind the others trains alone until it catches up) prepare (growth,
    checkpoints), draw their batches, get their losses and gradients from ``step_fn(runs,
    tokens)`` and update. ``draw(runs)``: their batches (default: drawn here by ``batch_at``).
    Returns ``(model, card)`` per run; ``(model, {})`` when ``stop_at`` stopped them.
    Progress (:mod:`induction.progress`): one row per run that asked for it."""
    # no TF32 on a GPU: the CPU recipe's float32 matmuls; the caller's setting comes back after
    matmul_precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        with progress_reporter(any(r.show_progress for r in runs)) as reporter:
            for run in runs:
                run.watch(reporter)
            while pending := [r for r in runs if r.st.step < r.cfg.steps]:
                step = min(r.st.step for r in pending)
                if stop_at is not None and step >= stop_at:
                    return [(r.model, {}) for r in runs]
                active = [r for r in pending if r.st.step == step]
                for run in active:
                    run.prepare()
                drawn = draw(active) if draw is not None else [None] * len(active)
                tokens = [run.batch(batch) for run, batch in zip(active, drawn, strict=True)]
                for run, loss, batch in zip(active, step_fn(active, tokens), tokens, strict=True):
                    run.update(loss, batch)
    except BaseException as e:
        outs = [r.out for r in runs if r.out is not None]
        full = disk_full(e, outs[0]) if outs else None
        if full is not None:
            raise full from None
        raise
    finally:
        torch.set_float32_matmul_precision(matmul_precision)
        for run in runs:
            run.close()
    return [run.finish() for run in runs]


class _Run:
    """One seed's training in progress: its model, optimizer, growth log, counters and files.
    :func:`train_runs` drives one or several (one per seed) through the same steps."""

    def __init__(
        self,
        cfg: FixedTrainConfig | None,
        out: Path | str | None,
        resume: bool,
        device: str | None,
        progress: bool,
        seeds_per_process: int = 1,
    ):
        folder = Path(out) if out is not None else None
        resume_from = None  # the run folder to continue
        if resume:
            if folder is None:
                raise InputError("resuming needs the run folder")
            cfg, resume_from = read_run_config(folder), folder
        elif cfg is None:
            raise InputError("training needs a config unless it resumes a run folder")
        if device is not None:
            cfg = replace(cfg, device=device)
        validate(cfg)
        torch.set_num_threads(cfg.threads)
        self.device = dev = check_device(cfg.device)
        self.grow = growth_steps(cfg)
        self.ckpt_steps = set(checkpoint_steps(cfg))

        if resume_from is not None and latest_checkpoint(resume_from) is None:
            # stopped before its first checkpoint (a full disk, a kill at step 0): nothing was
            # kept, so the run starts again from its recorded config, as it first would have
            shutil.rmtree(resume_from / CHECKPOINTS, ignore_errors=True)
            (resume_from / TRAIN_LOG).write_text("")
            resume_from = None
            model, log, plan = _initial_model(cfg)
            opt = _optimizer(cfg, model, dev)
            st = _State()
        elif resume_from is not None:
            model, opt, log, plan, st = _resume(cfg, resume_from, dev)
        else:
            model, log, plan = _initial_model(cfg)
            opt = _optimizer(cfg, model, dev)
            st = _State()
            if folder is not None:
                if (folder / CHECKPOINTS).exists() or (folder / "card.json").exists():
                    raise InputError(
                        f"{folder} already holds a run; resume it or pass another folder"
                    )
                folder.mkdir(parents=True, exist_ok=True)
                (folder / TRAIN_CONFIG).write_text(json.dumps(asdict(cfg), indent=1) + "\n")
                (folder / TRAIN_LOG).write_text("")
        self.cfg, self.out, self.model, self.opt, self.log, self.plan, self.st = (
            cfg, folder, model, opt, log, plan, st
        )  # fmt: skip
        self.resumed_at = st.step if resume_from is not None else None
        if not st.devices or st.devices[-1] != device_label(dev):
            st.devices.append(device_label(dev))
        if not st.seeds_per_process or st.seeds_per_process[-1] != seeds_per_process:
            st.seeds_per_process.append(seeds_per_process)
        self.logfile = open(self.out / TRAIN_LOG, "a") if self.out is not None else None
        self.show_progress = progress
        self.advance = Advance()  # a no-op until :meth:`watch`
        self.shown: tuple[float, float] | None = None  # (loss, score) of the last measured step
        self.watched = (time.monotonic(), st.step, st.flops)  # (time, step, FLOPs) at the start
        self.start = time.time()

    def watch(self, reporter: Progress) -> None:
        """Report this run's steps as a task of ``reporter`` from now on (a resumed run's
        starts at its step); rates and the time left count this session's steps only."""
        if not self.show_progress:
            return
        self.advance = reporter.task(self.cfg.steps, model_name(self.cfg))
        depth = len(decoder_layers(self.model))
        self.advance.describe(progress_label(model_name(self.cfg), depth, 0, 0.0))
        if self.st.step:
            self.advance(self.st.step)
        self.watched = (time.monotonic(), self.st.step, self.st.flops)

    def prepare(self) -> None:
        """Growth, checkpoint or bare resume state due before the update of this step."""
        cfg, out, st, step = self.cfg, self.out, self.st, self.st.step
        args = (self.model, cfg, st, self.log, self.plan)
        if (
            step in self.grow
            and self.log is not None
            and len(self.log.events) == self.grow.index(step)
        ):
            if out is not None:
                _checkpoint(out, *args, None, self.start, "pre")
            depth = len(decoder_layers(self.model))
            source, insert_at = GROWTH_PRESETS[cfg.grow_operator](depth, cfg.grow_block)
            _, self.opt = duplicate_layers(
                self.model,
                source,
                insert_at,
                log=self.log,
                step=step,
                operator=cfg.grow_operator,
                optimizer=self.opt,
                optimizer_state=cfg.optimizer_state,
            )
            if out is not None:
                _checkpoint(out, *args, self.opt, self.start, "post")
        elif out is not None and step in self.ckpt_steps and step != self.resumed_at:
            _checkpoint(out, *args, self.opt, self.start, "")
        elif (
            out is not None
            and cfg.state_every
            and step % cfg.state_every == 0
            and step not in (0, self.resumed_at)
        ):
            _resume_state(out, *args, self.opt, self.start)

    def batch(self, batch: np.ndarray | None = None) -> torch.Tensor:
        """This step's learning rate set and batch drawn, or ``batch`` (``batch_at`` of this
        step, drawn elsewhere), chained into the data hash."""
        for group in self.opt.param_groups:
            group["lr"] = lr_at(self.cfg, self.st.step)
        batch = batch_at(self.cfg, self.st.step, self.st.phases_opened) if batch is None else batch
        st = self.st
        st.data_sha256 = hashlib.sha256(st.data_sha256.encode() + batch.tobytes()).hexdigest()
        return torch.from_numpy(batch).to(self.device)

    def update(self, loss: float, tokens: torch.Tensor) -> None:
        """Clip, step the optimizer over the gradients now held, count, log and monitor."""
        cfg, st, model = self.cfg, self.st, self.model
        step, depth = st.step, len(decoder_layers(model))
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        self.opt.step()
        st.flops += matmul_flops_per_token(cfg, depth, tokens.shape[1]) * tokens.numel()
        st.dense_flops += (
            matmul_flops_per_token(cfg, cfg.reference_depth, tokens.shape[1]) * tokens.numel()
        )
        st.tokens += tokens.numel()
        st.step = step + 1
        row = {"step": st.step, "loss": loss, "lr": lr_at(cfg, step), "depth": depth}
        if st.step % cfg.eval_every == 0 or st.step == cfg.steps:
            score = float(induction_head_scores(model, cfg.eval_distance).max())
            row["max_induction"] = score
            st.history.append(
                {"step": st.step, "loss": round(loss, 4), "score": round(score, 4), "depth": depth}
            )
            self.shown = (loss, score)
        if cfg.probe_every and (st.step % cfg.probe_every == 0 or st.step == cfg.steps):
            found = probe(model, n_seq=32, intervals=False)
            row |= {"lookup": found.lookup, "varassign": found.varassign,
                    "position_gap": found.position_gap}  # fmt: skip
            entry = next((h for h in st.history if h["step"] == st.step), None)
            if entry is None:
                st.history.append(entry := {"step": st.step, "depth": depth})
            entry |= {k: round(v, 4) for k, v in row.items() if k in PROBE_FIELDS}
            for i in gate_opens(cfg, st.step, row, st.phases_opened):
                st.phases_opened[str(i)] = st.step
                row[f"phase_{i}_opens"] = True
        if self.logfile is not None:
            self.logfile.write(json.dumps(row) + "\n")
            self.logfile.flush()
        if self.show_progress:
            self._show(depth)

    def _show(self, depth: int) -> None:
        """Advance the progress row; its time left is this session's seconds per FLOP times
        the FLOPs of the steps left, which grow with each growth event and longer sequence
        still to come (a linear estimate would promise a grown model's end too early)."""
        start, first_step, first_flops = self.watched
        seconds, st = time.monotonic() - start, self.st
        loss, score = self.shown if self.shown is not None else (None, None)
        name = model_name(self.cfg)
        self.advance.describe(
            progress_label(name, depth, st.step - first_step, seconds, loss, score)
        )
        if st.flops > first_flops and st.step < self.cfg.steps:
            left = _flops_left(self.cfg, st.step, depth, st.phases_opened)
            self.advance.left(seconds / (st.flops - first_flops) * left)
        self.advance()

    def close(self) -> None:
        if self.logfile is not None:
            self.logfile.close()
            self.logfile = None

    def finish(self) -> tuple[object, dict]:
        """The card, and with ``out`` the model folder written."""
        self.st.seconds += time.time() - self.start
        card = _final_card(self.cfg, self.model, self.st, self.log)
        if self.out is not None:
            _write_final(self.out, self.model, card, self.log, self.plan)
        return self.model, card


def _flops_left(
    cfg: FixedTrainConfig, step: int, depth: int, opened: dict[str, int] | None = None
) -> float:
    """Training FLOPs of steps ``step .. steps - 1`` for a model of ``depth`` layers now,
    counting the growth events still due (at steps >= ``step``) and each data phase's sequence
    length: constant between those boundaries, so summed by segment."""
    due = [g for g in growth_steps(cfg) if g >= step]
    starts = phase_starts(cfg, opened)  # a gate not yet open: its latest start
    edges = sorted({step, cfg.steps, *(b for b in due + starts if step < b < cfg.steps)})
    total = 0.0
    for a, b in zip(edges, edges[1:]):
        layers = depth + cfg.grow_block * sum(g <= a for g in due)
        seq = phase_at(cfg, a, opened)["seq_len"]
        total += (b - a) * matmul_flops_per_token(cfg, layers, seq) * cfg.batch * seq
    return total


def _scores(model, cfg: FixedTrainConfig) -> dict:
    """A checkpoint's strongest induction score at each measured distance, and every head's
    score at ``repeat_len`` (``head_scores[layer][head]``), which the card keeps so the
    ``copied_head_before_growth`` gate and the copied-head table read it without weights."""
    out = {}
    for dist in sorted({cfg.eval_distance, cfg.repeat_len}):
        s = induction_head_scores(model, dist, batch=32, seed=12345)
        out[f"max_induction_d{dist}"] = round(float(s.max()), 4)
        if dist == cfg.repeat_len:
            out["head_scores"] = [[round(float(x), 4) for x in row] for row in s.tolist()]
    return out


def _final_card(cfg: FixedTrainConfig, model, st: _State, log) -> dict:
    card = {
        "name": model_name(cfg),
        "preset": cfg.preset,
        "family": cfg.family,
        "protocol": PROTOCOL,
        "seed": cfg.seed,
        "data_seed": cfg.stream_seed,
        "effective_depth": len(decoder_layers(model)),
        "steps": st.step,
        "tokens": st.tokens,
        "growth_steps": [e.step for e in log.events] if log is not None else [],
        "train_seconds": round(st.seconds, 1),
        "train_threads": cfg.threads,
        "train_device": " then ".join(st.devices),
        "train_seeds_per_process": st.seeds_per_process,
        "train_flops": st.flops,
        "dense_equivalent_flops": st.dense_flops,
        "flops_vs_dense": round(st.flops / st.dense_flops, 4),
        "stored_params": param_count(cfg, stored_layers(cfg)),
        "dense_params": param_count(cfg, cfg.reference_depth),
        "data_sha256": st.data_sha256,
        "phase_starts": phase_starts(cfg, st.phases_opened),
        "repeat_len": cfg.repeat_len,
        "config": asdict(cfg),
        "history": st.history,
        "train_log": TRAIN_LOG,
        "checkpoints": st.checkpoints + [{"step": st.step, "folder": "."}],
    }
    card["params_vs_dense"] = round(card["stored_params"] / card["dense_params"], 4)
    for dist in (20, cfg.repeat_len, 50):
        s = induction_head_scores(model, dist, batch=32, seed=12345)
        card[f"max_induction_d{dist}"] = round(float(s.max()), 4)
        if dist == cfg.repeat_len:
            card[f"heads_above_0.4_d{dist}"] = int((s >= 0.4).sum())
    return card


# ----------------------------------------------------------------------------- checkpoints
def _folder_name(step: int, kind: str) -> str:
    return f"step-{step}-pre" if kind == "pre" else f"step-{step}"


def _save_model(model, folder: Path, card: dict, log, plan, dtype: torch.dtype) -> None:
    """A loadable model folder (weights in ``dtype``; loading upcasts to float32)."""
    to_save = untie_to_stored(model, plan) if plan is not None else copy.deepcopy(model)
    to_save = to_save.to(device="cpu", dtype=dtype)
    to_save.config.use_cache = True
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # one "Writing model shards" bar per checkpoint
    try:
        to_save.save_pretrained(str(folder), safe_serialization=True)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    V.save_tokenizer(folder)
    if log is not None:
        log.save(folder / "duplication_log.json")
    if plan is not None:
        plan.save(folder)
    (folder / "card.json").write_text(json.dumps(card, indent=1) + "\n")


def _checkpoint(out: Path, model, cfg, st: _State, log, plan, with_state, start, kind):
    """Write ``checkpoints/step-<N>[-pre]`` atomically (built in a hidden folder, renamed).
    ``with_state``: the optimizer, when this checkpoint is a resume point."""
    name = _folder_name(st.step, kind)
    root = out / CHECKPOINTS
    root.mkdir(exist_ok=True)
    tmp, final = root / f".{name}.tmp", root / name
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    card = {
        "name": f"{model_name(cfg)} step {st.step}" + (" (before growth)" if kind == "pre" else ""),
        "checkpoint_of": model_name(cfg),
        "preset": cfg.preset,
        "family": cfg.family,
        "step": st.step,
        "depth": len(decoder_layers(model)),
        "tokens": st.tokens,
        "train_flops": st.flops,
        "repeat_len": cfg.repeat_len,
        "growth": {"pre": "before", "post": "after"}.get(kind),
        **_scores(model, cfg),
    }
    entry = {"step": st.step, "folder": f"{CHECKPOINTS}/{name}", "depth": card["depth"]}
    entry["head_scores"] = card["head_scores"]
    if kind:
        entry["growth"] = card["growth"]
    with _no_partial(tmp, final):
        _save_model(model, tmp, card, log, plan, getattr(torch, cfg.checkpoint_dtype))
        st.checkpoints.append(entry)
        if with_state is not None:
            state = _state_dict(model, cfg, st, log, plan, with_state, start)
            torch.save(state, tmp / TRAIN_STATE)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    if with_state is not None and cfg.keep_train_state == "last":
        _drop_older_states(root, keep=final)


def _state_dict(model, cfg, st: _State, log, plan, opt, start: float) -> dict:
    """Everything a resume needs; tensors and plain values only, so it loads with
    ``torch.load(..., weights_only=True)`` (no pickled objects)."""
    stored = untie_to_stored(model, plan) if plan is not None else model
    return {
        "step": st.step,
        "model": {k: v.clone() for k, v in stored.state_dict().items()},
        "optimizer": opt.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "counters": asdict(st) | {"seconds": st.seconds + time.time() - start},
        "log": log.to_json() if log is not None else None,
        "config": json.dumps(_identity(cfg), sort_keys=True),
    }


def _resume_state(out: Path, model, cfg, st: _State, log, plan, opt, start) -> None:
    """A bare resume point, ``checkpoints/state-<N>/training_state.pt``, written atomically;
    older training states go (``keep_train_state="last"``)."""
    root = out / CHECKPOINTS
    root.mkdir(exist_ok=True)
    tmp, final = root / f".state-{st.step}.tmp", root / f"state-{st.step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with _no_partial(tmp, final):
        torch.save(_state_dict(model, cfg, st, log, plan, opt, start), tmp / TRAIN_STATE)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    if cfg.keep_train_state == "last":
        _drop_older_states(root, keep=final)


@contextmanager
def _no_partial(tmp: Path, final: Path) -> Iterator[None]:
    """On any error remove the half-written folder ``tmp``; a full disk becomes an
    ``OSError(ENOSPC)`` naming ``final`` (one CLI line, no temporary file left)."""
    try:
        yield
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        full = disk_full(e, final)
        if full is not None:
            raise full from None
        raise


def _drop_older_states(root: Path, keep: Path) -> None:
    for other in root.glob(f"*/{TRAIN_STATE}"):
        if other.parent != keep:
            other.unlink()
    for bare in root.glob("state-*"):
        if bare != keep and bare.is_dir() and not any(bare.iterdir()):
            bare.rmdir()


def _resume_point(out: Path) -> Path:
    """The latest checkpoint holding a training state (post-growth beats pre at one step)."""
    found = []
    for pattern in (f"step-*/{TRAIN_STATE}", f"state-*/{TRAIN_STATE}"):
        for state in (out / CHECKPOINTS).glob(pattern):
            step = _checkpoint_step(state.parent.name)
            if step is not None:  # a stray folder (``step-notes``) is not a checkpoint
                found.append((step, not state.parent.name.endswith("-pre"), state.parent))
    if not found:
        raise InputError(f"{out} has no checkpoint to resume from")
    return max(found)[2]


_CHECKPOINT_NAME = re.compile(r"^(?:step|state)-(\d+)(?:-pre)?$")


def _checkpoint_step(name: str) -> int | None:
    m = _CHECKPOINT_NAME.match(name)
    return int(m.group(1)) if m else None


def _resume(
    cfg: FixedTrainConfig, out: Path, device: torch.device
) -> tuple[LlamaForCausalLM, torch.optim.Optimizer, DuplicationLog | None, LoopPlan | None, _State]:
    folder = _resume_point(out)
    try:
        # a state saved on a GPU resumes anywhere: read to the CPU, moved to ``device`` below
        state = torch.load(folder / TRAIN_STATE, weights_only=True, map_location="cpu")
    except Exception as e:  # truncated, damaged, or a pickle that weights_only refuses
        raise InputError(
            f"{folder / TRAIN_STATE} cannot be read ({one_line(e)}); the run cannot resume "
            "from it: delete that checkpoint to resume from an earlier one, or train afresh"
        ) from None
    bad = f"{folder / TRAIN_STATE} is not this run's training state"
    fix = "delete that checkpoint to resume from an earlier one, or train afresh"
    _check_state(state, cfg, folder, bad, fix)
    try:
        log = DuplicationLog.from_json(state["log"]) if state["log"] is not None else None
        plan = None
        if cfg.family == "looped":
            plan = LoopPlan(block=cfg.loop_block, loops=cfg.loops)
            model = build_model(cfg, plan.stored_layers)
            model.load_state_dict(state["model"])
            model = tie_layers(model, plan)
        else:
            model = build_model(cfg, log.final_depth if log is not None else cfg.depth)
            model.load_state_dict(state["model"])
        opt = _optimizer(cfg, model, device)
        opt.load_state_dict(state["optimizer"])  # moves the moments to their parameters' device
        torch.set_rng_state(state["torch_rng"])
        st = _State(**state["counters"])
    except (RuntimeError, ValueError, TypeError, KeyError, LineageError) as e:
        raise InputError(f"{bad} ({one_line(e, 160)}); {fix}") from None
    # forget what happened after the resume point: later checkpoints, log lines, temp folders
    for path in (out / CHECKPOINTS).iterdir():
        step = _checkpoint_step(path.name)
        if path.name.startswith(".") or (step is not None and step > st.step):
            shutil.rmtree(path)
    log_path = out / TRAIN_LOG
    rows = [r for r in log_path.read_text().splitlines() if _logged_step(r) <= st.step]
    log_path.write_text("".join(r + "\n" for r in rows))
    return model, opt, log, plan, st


#: Counters added after training states were saved; an older state resumes with their default.
_STATE_ADDED_LATER = {"phases_opened"}


def _check_state(state, cfg: FixedTrainConfig, folder: Path, bad: str, fix: str) -> None:
    """A training state's keys, types and step, and the config it was saved under (states
    since the config was stored in them) equal to ``train_config.json`` but the device."""
    keys = ("step", "model", "optimizer", "torch_rng", "counters", "log")
    if not isinstance(state, dict) or any(k not in state for k in keys):
        have = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise InputError(f"{bad} (it needs {', '.join(keys)}; it has {have}); {fix}")
    counters = state["counters"]
    known = {f.name for f in fields(_State)}
    if (
        not isinstance(state["model"], dict)
        or not isinstance(state["optimizer"], dict)
        or not isinstance(state["torch_rng"], torch.Tensor)
        or not isinstance(counters, dict)
        or not set(counters) <= known
        or not known - set(counters) <= _STATE_ADDED_LATER
        or counters.get("step") != state["step"]
        or not isinstance(state["step"], int)
        or not 0 <= state["step"] < cfg.steps
        or state["step"] != _checkpoint_step(folder.name)
    ):
        raise InputError(
            f"{bad} (its step {state['step']!r}, counters or tensors do not fit the folder "
            f"{folder.name} of a {cfg.steps}-step run); {fix}"
        )
    card = folder / "card.json"  # a checkpoint (not a bare state) names its run
    if card.is_file():
        from induction.store.io import read_json

        of = read_json(card, "checkpoint card")
        of = of.get("checkpoint_of") if isinstance(of, dict) else None
        if of is not None and of != model_name(cfg):
            raise InputError(
                f"{folder} is a checkpoint of {of}, but {TRAIN_CONFIG} describes "
                f"{model_name(cfg)}; restore the run's {TRAIN_CONFIG}, or train afresh"
            )
    recorded = state.get("config")
    if recorded is not None:
        was = json.loads(recorded) if isinstance(recorded, str) else {}
        now = _identity(cfg)
        changed = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
        if changed:
            what = ", ".join(f"{k} {was.get(k)!r} -> {now.get(k)!r}" for k in changed[:4])
            raise InputError(
                f"{folder.parent.parent / TRAIN_CONFIG} differs from the config the run was "
                f"trained with ({what}); restore it, or train afresh"
            )


def _logged_step(line: str) -> float:
    """The step of a log line; a torn line (what SIGKILL leaves mid-write) is dropped."""
    try:
        step = json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return math.inf
    return step if isinstance(step, int) else math.inf


def _write_final(out: Path, model, card: dict, log, plan) -> None:
    """The model folder: files built in a hidden folder, moved in, ``card.json`` last; with
    ``keep_train_state="last"`` the training states are dropped (nothing left to resume)."""
    tmp = out / ".final.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with _no_partial(tmp, out):
        _save_model(model, tmp, card, log, plan, torch.float32)
    for path in sorted(tmp.iterdir(), key=lambda p: p.name == "card.json"):
        os.replace(path, out / path.name)
    tmp.rmdir()
    if card["config"]["keep_train_state"] == "last":
        for state in (out / CHECKPOINTS).glob(f"*/{TRAIN_STATE}"):
            state.unlink()
        for bare in (out / CHECKPOINTS).glob("state-*"):
            shutil.rmtree(bare)


def latest_checkpoint(out: Path) -> int | None:
    """Step of the latest resumable checkpoint of an unfinished run, None if there is none."""
    try:
        return int(_resume_point(Path(out)).name.split("-")[1])
    except (InputError, FileNotFoundError):
        return None
