"""The settings of the three causal jobs: circuits, effects and function-vector scores.

Frozen and validated on construction, so a bad setting fails in one line before a model is
loaded; each field that is a command-line option carries its flag and help
(``induction.config_fields``), from which ``induction circuits``, ``effects`` and ``fv`` build
their options. Kept free of torch so ``induction --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from induction.config_fields import (
    normalize_seeds,
    option,
    prompt_batch_option,
    seeds_option,
    seq_len_option,
)
from induction.errors import InputError

#: How a head is silenced: zeroed, set to its mean, or resampled from another prompt.
PatchMode = Literal["zero", "mean", "resample"]
#: Which prompts a mean or resample comes from: random tokens, or the task's own prompts.
Reference = Literal["random", "task"]
MODES: tuple[PatchMode, ...] = get_args(PatchMode)
REFERENCES: tuple[Reference, ...] = get_args(Reference)

#: Rows (prompts x heads) per ablation pass on CPU; measured with benchmarks/effects_speed.py.
DEFAULT_MAX_ROWS = 256

MODE_HELP = "How a head is ablated: zero, mean or resample."
REFERENCE_HELP = (
    "Distribution for mean/resample: random (random-token prompts, Yin and Steinhardt 2025) "
    "or task (the repeated-token prompts)."
)


def check_mode(mode: str, reference: str) -> None:
    if mode not in MODES:
        raise InputError(f"unknown ablation mode {mode!r}; use one of {', '.join(MODES)}")
    if reference not in REFERENCES:
        raise InputError(f"unknown reference {reference!r}; use one of {', '.join(REFERENCES)}")


def _check_prompts(batch: Any, seeds: Any) -> None:
    """The prompt settings every head-level job shares, checked before a model loads."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputError(f"--batch must be a positive integer, got {batch!r}")
    normalize_seeds(seeds)


@dataclass(frozen=True)
class CircuitsConfig:
    """Settings of the circuits job (:func:`induction.circuits.job.run`).

    Attributes:
        threshold: induction heads are those scoring at least this (stripe convention).
        top: instead, the ``top`` heads by induction score.
        seq_len, batch, seeds: the repeated-token prompts (as ``induction scan``).
        mode, reference: how a candidate is ablated (:mod:`induction.circuits.patching`).
        key_path: also measure the drop on the path into the induction head's keys.
        max_rows: prompts x candidates per forward pass.
        lineage: for a grown model, trace each circuit to its ancestors
            (:func:`induction.circuits.history.circuit_lineage`), including the shipped initial
            network.
        progress: report the scan and the ablation passes (:mod:`induction.progress`: a bar
            on a terminal, periodic lines in a log); ``induction circuits`` turns it on.
    """

    threshold: float = option(0.4, "Induction heads: score at least this.")
    top: int | None = option(None, "Instead of --threshold, the top n heads by induction score.")
    seq_len: int | None = seq_len_option()
    batch: int = prompt_batch_option(8)
    seeds: Any = seeds_option(1)
    mode: PatchMode = option("zero", MODE_HELP)
    reference: Reference = option("task", REFERENCE_HELP)
    key_path: bool = option(
        True, "Also ablate on the path into the keys.", "--key-path/--no-key-path"
    )
    max_rows: int = 256
    lineage: bool = True
    progress: bool = False

    def __post_init__(self) -> None:
        check_mode(self.mode, self.reference)
        _check_prompts(self.batch, self.seeds)
        if self.top is not None and self.top < 1:
            raise InputError(f"--top must be >= 1, got {self.top}")
        if not 0 <= self.threshold <= 1:
            raise InputError(f"--threshold must be in [0, 1], got {self.threshold}")


@dataclass(frozen=True)
class EffectsConfig:
    """Settings of the effects job (:func:`induction.circuits.effects.run`).

    Attributes:
        mode: ``zero``, ``mean`` or ``resample``; reference: ``random`` or ``task`` (see
            :mod:`induction.circuits.patching`).
        seq_len, batch, seeds: the repeated-token prompts (as ``induction scan``).
        atp: also run attribution patching and correlate it with the ablation.
        max_rows: prompts x heads per ablation pass.
        scores: attach the scan's induction and previous-token scores to the table.
        progress: report the passes (:mod:`induction.progress`: a bar on a terminal,
            periodic lines in a log); ``induction effects`` turns it on.
    """

    seq_len: int | None = seq_len_option()
    batch: int = prompt_batch_option(8)
    seeds: Any = seeds_option(1)
    mode: PatchMode = option("zero", MODE_HELP)
    reference: Reference = option("task", REFERENCE_HELP)
    atp: bool = option(True, "Also estimate by attribution patching.", "--atp/--no-atp")
    max_rows: int = DEFAULT_MAX_ROWS
    scores: bool = False
    progress: bool = False

    def __post_init__(self) -> None:
        check_mode(self.mode, self.reference)
        _check_prompts(self.batch, self.seeds)
        if self.max_rows < 1:
            raise InputError(f"max_rows must be >= 1, got {self.max_rows}")


#: How FV prompts are corrupted (:func:`induction.circuits.fv.fv_prompts`).
CORRUPTIONS = ("shuffled", "foreign")


@dataclass(frozen=True)
class FVConfig:
    """Settings of the function-vector job (:func:`induction.circuits.fv.run`).

    Attributes:
        tasks: task names of the suite (default: all).
        suite: the ``{input, output}`` pair tasks: ``words`` (English word tasks, the
            default for real tokenizers) or ``zoofacts`` (the zoo world's four relations, the
            default for zoo models); None picks by the model's vocabulary.
        n_prompts, shots: prompts per task and demonstrations per prompt.
        corruption: ``shuffled`` or ``foreign`` (:func:`induction.circuits.fv.fv_prompts`).
        seeds: prompt seeds; the score is the mean over seeds and ``fv_std`` their spread.
        max_rows: prompts x patched heads per forward pass.
        progress: report the passes (:mod:`induction.progress`).
    """

    tasks: Sequence[str] | None = option(
        None, "Only these tasks of the suite (repeatable).", "--task"
    )
    suite: str | None = option(
        None,
        "words (English word tasks; default for real models) or zoofacts (the zoo world's "
        "relations; default for zoo models).",
    )
    n_prompts: int = option(16, "Few-shot prompts per task and seed.")
    shots: int = option(5, "Demonstrations per prompt.")
    seeds: int = option(1, "Prompt seeds 0..n-1 (the spread is over seeds).")
    corruption: str = option(
        "shuffled",
        "How the corrupted prompts lose the task: shuffled (Todd et al.: the labels permuted "
        "within the prompt) or foreign (each label drawn from the other tasks' answers, for "
        "tasks whose label set alone names the task).",
    )
    max_rows: int = DEFAULT_MAX_ROWS
    progress: bool = False

    def __post_init__(self) -> None:
        for name, least in (("shots", 2), ("n_prompts", 1), ("seeds", 1), ("max_rows", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                what = " to shuffle labels" if name == "shots" else ""
                flag = name.replace("_", "-")
                raise InputError(f"--{flag} must be >= {least}{what}, got {getattr(self, name)}")
        if self.corruption not in CORRUPTIONS:
            raise InputError(
                f"--corruption {self.corruption!r}: use one of {', '.join(CORRUPTIONS)}"
            )
        if self.suite not in (None, "words", "zoofacts"):
            raise InputError(
                f"--suite {self.suite!r}: FV scores need input -> output pair tasks; use "
                "--suite words or --suite zoofacts"
            )
