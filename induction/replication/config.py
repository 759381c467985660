"""What the replication measures and what the source claims (docs/research.md, "The source
claims"; /work/shared/RESEARCH.md): the settings of one run and the source's figures."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ablation.stats import DEFAULT_CONTROLS
from induction.config_fields import option
from induction.errors import InputError

_CHECKOUT = Path(__file__).resolve().parents[2]
#: Where results go by default: the checkout's ``benchmarks/results/zoo4`` (round 4; the
#: records of the earlier zoos sit beside it, ``zoo3/``, ``zoo2/`` and the top level), else
#: ``./replication-results`` for an installed package.
DEFAULT_OUT = (
    _CHECKOUT / "benchmarks" / "results" / "zoo4"
    if (_CHECKOUT / "benchmarks").is_dir()
    else Path("replication-results")
)

#: The source's families (Kapl et al. 2025, arXiv 2512.08819), in the order of its tables.
SOURCE_FAMILIES = ("dense", "lidas", "looped")
SOURCE_LABEL = {"dense": "dense", "lidas": "LIDAS", "looped": "looped"}

#: The scale the source's effect is read on, per verdict readout, declared for round 4 before
#: it was measured (docs/replication.md, rule R8): ``cand_acc`` is an accuracy, as the source's
#: F1, so its difference of mean drops; a log-probability drop has no F1 units, so the ratio.
#: Elsewhere (A9) a word stands only where both scales give it.
ROUND4_SCALES = {"cand_acc": "difference", "logprob": "ratio"}

#: The commit every round-4 model was measured from (docs/replication.md, "How round 4 is
#: measured"): a measurement is keyed by its measuring code, so the round was measured from one
#: frozen worktree over the sessions it spanned and its verdict is read with ``--record``.
ROUND4_MEASURING_COMMIT = "7e62c22"

#: The source's figures, one model per configuration (no spread was measured).
SOURCE = {
    # mean F1 drop over 19 few-shot tasks with the top 20% heads by induction score ablated
    "drop": {"dense": 0.08, "lidas": 0.18, "looped": 0.28},
    # RegBench total variation distance of the clean 3B models (lower is better)
    "tvd": {"dense": 0.137, "lidas": 0.119, "looped": 0.125},
    # 3B LIDAS: 10 of the 12 strongest induction heads descend from 2 initial-network heads
    "lineage": {"heads": 10, "top": 12, "ancestors": 2, "model": "3B LIDAS"},
    # LIDAS spends 26% fewer training FLOPs than dense
    "flops_saving": 0.26,
    "n_tasks": 19,
    "frac": 0.2,
}

#: The zoo's suite groups (docs/zoo19.md) in the order of Saunshi et al. 2025's suite.
GROUPS = ("closed_qa", "open_qa", "math", "primitives")


@dataclass(frozen=True)
class Settings:
    """What is measured and how much work it takes (:meth:`fast` for CI and notebooks).

    The ablation goes through :func:`ablation.ablate` exactly as ``induction ablate`` does
    (prompt budget from the model card, :func:`ablation.config.prompt_budget`); ``suite`` is
    the measured suite (``zoo4g``: the source's 19 tasks in four groups in round 4's training
    formats, fresh content where in-context, plus two positive controls, docs/replication.md;
    ``zootrain`` and ``zoo19`` for the earlier zoos' records); RegBench is the ``regbench``
    task of the ``zoo`` suite (held-out automata in the zoo's training format, TVD = ½Σ|p −
    q|), ablated with the same head plan.
    """

    frac: float = SOURCE["frac"]  # share of heads ablated (ceil, as `induction ablate --frac`)
    top_n: int | None = None  # heads traced against random sets; None: as many as ablated
    source_top: int = SOURCE["lineage"]["top"]  # the source's "12 strongest heads"
    # random head sets of each shape per model: round 4's 20 (R4-verdict: the excess over
    # random heads is reported beside the drop and decides no word; the second zoo used 100)
    controls: int = DEFAULT_CONTROLS
    n_items: int = 32  # items per task and prompt seed
    prompt_seeds: tuple[int, ...] = (0, 1)  # consecutive task draws
    # the measured suite: round 4's zoo4g, the source's 19 tasks in four groups in the round-4
    # training formats (docs/replication.md, R4-suite); the second zoo's record used zootrain
    # (its closed-book and primitive groups), the first fixed-protocol zoo's zoo19
    suite: str = "zoo4g"
    tasks: tuple[str, ...] | None = None  # None: the whole suite
    regbench: bool = True  # also ablate the zoo suite's RegBench task (TVD)
    scan_seeds: tuple[int, ...] = (0, 1, 2)  # as `induction scan` / `induction ablate`
    scan_batch: int = 32
    tied: bool = False  # looped: ablate a stored head in every pass
    mode: str = "zero"
    batch_size: int = 32
    null_samples: int = 2000  # Monte Carlo draws for the random-ancestor expectation
    n_boot: int = 2000  # bootstrap resamples of each model's mean drop
    cache: bool = False  # reuse `induction ablate`'s resume cache (same numbers, resumable)
    # controls: uniform, with the target's heads-per-layer profile, or both (``controls``
    # sets of each; ablation.selection.shaped_controls)
    controls_shape: str = "both"
    readouts: bool = True  # logprob and cand_acc beside F1/EM (ablation.readout)
    # further fractions ablated (readouts and F1), each against ``extra_controls`` sets of
    # each shape: a drop read at one fraction only can be an artefact of that fraction
    extra_fracs: tuple[float, ...] = (0.05, 0.1)
    extra_controls: int = 20

    @classmethod
    def fast(cls, **overrides) -> Settings:
        """Reduced settings: seconds per model on two CPU cores."""
        base = cls(
            controls=2,
            n_items=8,
            tasks=("copy", "var_depth0"),  # a positive control and one measured task
            scan_seeds=(0,),
            scan_batch=8,
            null_samples=500,
            n_boot=200,
            extra_fracs=(0.1,),
            extra_controls=2,
        )
        return replace(base, **overrides)

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        """Read :func:`dataclasses.asdict`'s form back (lists become tuples; unknown keys,
        e.g. from an older JSON, are dropped)."""
        fields: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in data.items()
            if k in cls.__dataclass_fields__
        }
        return cls(**fields)


@dataclass(frozen=True)
class SettingsOptions:
    """The command line's choice of :class:`Settings` (``induction replicate``'s setting
    options, built from these fields by ``induction.commands.config_options``): a preset,
    full or ``fast``, and the fields it overrides; ``None`` or ``False`` keeps the preset's
    value. :meth:`settings` builds them."""

    fast: bool = option(False, "Reduced settings (CI, notebooks).")
    controls: int | None = option(None, "Random head sets per model.")
    n_items: int | None = option(None, "Items per task and prompt seed.")
    prompt_seeds: int | None = option(None, "Prompt seeds 0..N-1.")
    tasks: tuple[str, ...] | None = option(
        None, "Tasks of the suite (default all; --tasks a b or --tasks a --tasks b)."
    )
    suite: str | None = option(
        None, "Measured suite (default zoo4g, round 4's; the second zoo's record: zootrain)."
    )
    no_regbench: bool = option(False, "Skip the RegBench ablation.")
    top: int | None = option(None, "Heads traced against random sets.")
    tied: bool = option(False, "Looped: ablate tied across passes.")
    cache: bool = option(
        False, "Reuse `induction ablate`'s resume cache (same numbers; resumable)."
    )

    def __post_init__(self) -> None:
        for flag, value, low in (
            ("--controls", self.controls, 0),
            ("--n-items", self.n_items, 1),
            ("--prompt-seeds", self.prompt_seeds, 1),
            ("--top", self.top, 1),
        ):
            if value is not None and value < low:
                raise InputError(f"{flag} must be an integer >= {low}, got {value}")
        if self.suite is not None:
            from ablation.tasks import SUITES

            if self.suite not in SUITES:
                raise InputError(f"--suite {self.suite!r} is not a suite; use one of "
                                 f"{', '.join(SUITES)}")  # fmt: skip

    def settings(self) -> Settings:
        """The preset with this choice's overrides."""
        base = Settings.fast() if self.fast else Settings()
        overrides = {
            "controls": self.controls,
            "n_items": self.n_items,
            "top_n": self.top,
            "tied": self.tied or None,
            "tasks": tuple(self.tasks) if self.tasks else None,
            "suite": self.suite,
            "prompt_seeds": tuple(range(self.prompt_seeds)) if self.prompt_seeds else None,
            "regbench": False if self.no_regbench else None,
            "cache": self.cache or None,
        }
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})
