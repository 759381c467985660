"""The settings of one ablation experiment, validated once for the CLI, notebooks and
benchmarks alike (:func:`ablation.ablate` takes an :class:`AblationConfig`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Literal, get_args

from induction.config_fields import option
from induction.errors import InputError

#: Random head sets per run unless asked otherwise: with n controls the empirical p-value
#: (1 + k) / (1 + n) cannot go below 1 / (1 + n), so 20 is the least that can show p < 0.05.
DEFAULT_CONTROLS = 20
#: Longest generated prompt for models without a training length on their card.
MAX_PROMPT_TOKENS = 512

#: How ablated heads are silenced: zeroed, or set to their mean output.
AblationMode = Literal["zero", "mean"]
MODES: tuple[AblationMode, ...] = get_args(AblationMode)
#: Control head sets: uniform over the non-target heads, with the target's heads-per-layer
#: profile (``ablation.selection.shaped_controls``), or both (``controls`` of each).
ControlsShape = Literal["uniform", "layer", "both"]
CONTROL_SHAPES: tuple[ControlsShape, ...] = get_args(ControlsShape)
#: What a mean ablation averages over: all positions, or each position separately.
MeanOver = Literal["all", "position"]
MEAN_OVER: tuple[MeanOver, ...] = get_args(MeanOver)


@dataclass(frozen=True)
class AblationConfig:
    """What to ablate, on which tasks, against how many controls.

    ``controls_shape``: ``controls`` uniform random head sets, ``controls`` sets with the
    target's heads-per-layer profile within ``band`` layers (``layer``), or both (the
    default; docs/research.md, "controls shaped like the target"). ``readouts`` adds the
    teacher-forced log-probability of the gold answer and the candidate accuracy beside
    F1/EM (``ablation.readout``).
    ``heads`` (e.g. ``"L3H1,L5H0"``) replaces the top-``frac`` selection by ``score``.
    ``suite=None`` takes the model's default (``zoo`` for the zoo vocabulary, else ``words``).
    ``max_prompt_tokens=None`` takes :func:`prompt_budget` of the model: a zoo model's
    training length, else its context capped at :data:`MAX_PROMPT_TOKENS`.
    ``lm_eval`` (lm-evaluation-harness task, group or tag names, or task YAML paths) runs
    those tasks instead of a suite, looking in the ``lm_eval_include`` folder of task configs
    first (``docs/lm-eval.md``); ``n_items`` is then the harness's ``limit`` and ``shots`` its
    ``num_fewshot``. ``trust_remote_code`` lets those task configs run code (``!function``
    imports, HF ``evaluate`` metric scripts, templates outside jinja2's sandbox; see
    ``docs/safety.md``); without it such a config is refused before any is loaded.
    ``device``/``dtype`` place a model given as a spec (a loaded model stays where it is);
    ``progress`` shows the progress bar. These three say how the run executes, not what it
    measures: no command-line option of their own here (``induction ablate`` has ``--device``,
    ``--dtype`` and ``--quiet``), and :meth:`to_dict` records ``device``/``dtype`` only when
    set, so cache keys and stored configs stay as they were.
    """

    frac: float = option(
        0.2, "Fraction of all heads to ablate, top by --score (ceil, at least one)."
    )
    heads: str | None = option(None, "Explicit heads 'L.H,L.H' instead of --frac/--score.")
    score: str = option("induction", "Detector score column used to rank heads.")
    suite: str | None = option(
        None,
        "zoo19 (default for zoo models), zootrain (second zoo), zoo4g (round-4 models), zoo, "
        "words (default otherwise), paper19, regbench, gsm8k, or a JSONL task file.",
    )
    tasks: tuple[str, ...] | None = option(
        None, "Only these tasks of the suite (repeatable).", "--task"
    )
    mode: AblationMode = option("zero", "zero or mean ablation.")
    mean_over: MeanOver = option(
        "all", "Mean ablation: mean over all reference tokens, or per position."
    )
    controls: int = option(
        DEFAULT_CONTROLS, "Random head sets of the same size (p-values need >= 20 to reach 0.05)."
    )
    controls_shape: ControlsShape = option(
        "both",
        "uniform (heads drawn from all layers), layer (the target's heads per layer, in layers "
        "within --band of its layers) or both (--controls of each).",
    )
    band: int | None = option(
        None, "Layer-shaped controls: layers either side (default n_layers/8)."
    )
    readouts: bool = option(
        True,
        "Also the teacher-forced log-prob of the gold answer and the accuracy over the answer "
        "candidates (one forward pass per item).",
        "--readouts/--no-readouts",
    )
    exclude: str | None = option(
        None,
        "SCORE:FRAC, e.g. induction:0.02 or fv:0.02: leave the top FRAC heads by another score "
        "out of the target and of every control (exclusion ablation).",
    )
    match_layers: bool = option(False, "Controls take as many heads per layer as the target set.")
    tied: bool = option(False, "Looped models: ablate a head in every pass of its block.")
    shots: int | None = option(None, "Demonstrations per prompt (default: per suite/task).")
    n_items: int | None = option(None, "Evaluated items per task (default: per suite).")
    seed: int = option(0, "Random seed (prompts, sampling).")
    prompt_seeds: int = option(
        1, "Repeat with this many prompt seeds (seed, seed+1, ...) and report the spread."
    )
    batch: int = option(32, "Prompts per forward pass.", "--batch", "--batch-size")
    head_sets_per_pass: int | None = option(
        None,
        "Head sets (clean, target, controls) evaluated together in one batched forward, the "
        "prompts repeated per set (default: as many as a quarter of the free memory holds; "
        "1: one set per pass). Same numbers either way.",
    )
    max_prompt_tokens: int | None = option(
        None,
        "Longest generated prompt (default: a zoo model's training length, else the context "
        "capped at 512).",
    )
    data_dir: Path | None = option(
        None, "Local datasets for paper19/gsm8k (default $INDUCTION_DATA or ./data)."
    )
    hub: bool = option(False, "Fetch missing datasets with `datasets` (needs network).")
    cache: bool = option(
        True,
        "Read and write the resume cache of finished results (--no-cache: neither).",
        "--cache/--no-cache",
    )
    lm_eval: tuple[str, ...] | None = option(
        None,
        "lm-evaluation-harness tasks (names, tags or YAML files; comma-separated or repeated) "
        "instead of --suite; needs the [lm-eval] extra. See docs/lm-eval.md.",
    )
    lm_eval_include: Path | None = option(
        None, "Folder of local lm-eval task configs, searched first."
    )
    token_loss: bool = option(
        False,
        "Also the token-loss difference (loss late in a sequence minus early, Olsson et al. "
        "2022) under the same head sets: held-out zoo text, or CPython's documentation prose "
        "for other models.",
    )
    trust_remote_code: bool = option(
        False,
        "Allow a checkpoint's own Python code, and lm-eval task configs' code (!function "
        "imports, HF evaluate metrics, templates outside the sandbox), to run.",
    )
    device: str = "auto"
    dtype: str | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.lm_eval, str | list | tuple):  # "a,b", ["a", "b"]: ("a", "b")
            given = [self.lm_eval] if isinstance(self.lm_eval, str) else list(self.lm_eval)
            if all(isinstance(n, str) for n in given):
                names = (p.strip() for n in given for p in n.split(","))
                object.__setattr__(self, "lm_eval", tuple(n for n in names if n))
        if isinstance(self.lm_eval_include, str):
            object.__setattr__(self, "lm_eval_include", Path(self.lm_eval_include))
        if isinstance(self.tasks, str | list):  # "a,b" or ["a", "b"]: ("a", "b"), as --task
            given = [self.tasks] if isinstance(self.tasks, str) else self.tasks
            if all(isinstance(n, str) for n in given):
                names = (p.strip() for n in given for p in n.split(","))
                object.__setattr__(self, "tasks", tuple(n for n in names if n))
        self.validate()

    def validate(self) -> None:
        """One-line :class:`InputError` for any setting out of range or of the wrong type."""
        self._check_types()
        if not (isinstance(self.frac, int | float) and 0 < self.frac <= 1):
            raise InputError(f"--frac must be in (0, 1], got {self.frac}; e.g. --frac 0.2")
        if self.heads is not None and not str(self.heads).strip():
            raise InputError("--heads is empty; write e.g. 'L3H1,L5H0', or drop it to use --frac")
        if self.mode not in MODES:
            raise InputError(f"--mode must be zero or mean, got {self.mode!r}")
        if self.controls_shape not in CONTROL_SHAPES:
            raise InputError(
                f"--controls-shape must be uniform, layer or both, got {self.controls_shape!r}"
            )
        if self.exclude is not None:
            self.exclusion()  # validates
        if self.band is not None and (not isinstance(self.band, int) or self.band < 0):
            raise InputError(f"--band must be an integer >= 0, got {self.band!r}")
        if self.mean_over not in MEAN_OVER:
            raise InputError(f"--mean-over must be all or position, got {self.mean_over!r}")
        for name, low in (("controls", 0), ("prompt_seeds", 1), ("batch", 1), ("seed", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                flag = "--" + name.replace("_", "-")
                raise InputError(f"{flag} must be an integer >= {low}, got {value!r}")
        if self.seed + self.prompt_seeds > 2**32:
            raise InputError(f"--seed {self.seed} is too large; use a seed below 2**32")
        for name in ("shots", "n_items", "max_prompt_tokens", "head_sets_per_pass"):
            value = getattr(self, name)
            low = 0 if name == "shots" else 1
            if value is not None and (
                not isinstance(value, int)
                or isinstance(value, bool)
                or not low <= value <= MAX_COUNT
            ):
                flag = "--" + name.replace("_", "-")
                raise InputError(
                    f"{flag} must be an integer from {low} to {MAX_COUNT:,}, got {value!r}"
                )
        if self.lm_eval is not None:
            if not self.lm_eval or not all(isinstance(n, str) and n for n in self.lm_eval):
                raise InputError(
                    "lm_eval must be a tuple of task names, e.g. lm_eval=('zoo_lookup',)"
                )
            if self.suite is not None:
                raise InputError("--suite and --lm-eval exclude each other; drop one")
        elif self.lm_eval_include is not None:
            raise InputError("--lm-eval-include needs --lm-eval TASKS")
        if not isinstance(self.trust_remote_code, bool):
            raise InputError(
                f"trust_remote_code must be True or False, got {self.trust_remote_code!r}"
            )

    def _check_types(self) -> None:
        """Python callers pass values the CLI cannot: a bool is not a count (``controls=True``
        is not 1), a number is not a suite or a head list."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _FLAGS and not isinstance(value, bool):
                raise InputError(f"{f.name} must be True or False, got {value!r}")
            if f.name in _COUNTS and isinstance(value, bool):
                raise InputError(f"{f.name} must be an integer, got {value!r}")
            if f.name in _TEXTS and value is not None and not isinstance(value, str):
                raise InputError(f"{f.name} must be a string, got {value!r}")
        if isinstance(self.frac, bool):
            raise InputError(f"frac must be a number in (0, 1], got {self.frac!r}")
        if self.tasks is not None and (
            not isinstance(self.tasks, tuple)
            or not self.tasks
            or not all(isinstance(t, str) and t for t in self.tasks)
        ):
            raise InputError(
                f"tasks must be task names, e.g. tasks=('fact_digit',), got {self.tasks!r}"
            )

    def exclusion(self) -> tuple[str, float] | None:
        """``exclude`` parsed: ``(score, frac)``, or None."""
        if self.exclude is None:
            return None
        name, _, value = str(self.exclude).partition(":")
        try:
            frac = float(value)
        except ValueError:
            frac = math.nan
        if not name or not (0 < frac < 1):
            raise InputError(
                f"--exclude must be SCORE:FRAC with FRAC in (0, 1), e.g. induction:0.02; "
                f"got {self.exclude!r}"
            )
        return name, frac

    def with_(self, **changes) -> AblationConfig:
        """A copy with ``changes`` applied (validated)."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise InputError(f"unknown ablation setting(s): {', '.join(sorted(unknown))}")
        return replace(self, **changes)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["data_dir"] = None if self.data_dir is None else str(self.data_dir)
        d["tasks"] = None if self.tasks is None else list(self.tasks)
        d["lm_eval"] = None if self.lm_eval is None else list(self.lm_eval)
        d["lm_eval_include"] = None if self.lm_eval_include is None else str(self.lm_eval_include)
        if not self.trust_remote_code:  # a permission, not a setting: keys stay as they were
            del d["trust_remote_code"]
        if not self.token_loss:  # an added outcome: the few-shot keys stay as they were
            del d["token_loss"]
        del d["progress"]  # how the run shows itself, not what it measures
        for name, default in (("device", "auto"), ("dtype", None)):
            if d[name] == default:  # added later: default keys stay as they were
                del d[name]
            else:
                d[name] = str(d[name])  # "cuda:0", torch.float16: as text
        if self.head_sets_per_pass is None:  # speed only: the keys stay as they were
            del d["head_sets_per_pass"]
        return d


#: Fields by the type a Python caller must pass (``AblationConfig._check_types``).
_FLAGS = ("match_layers", "tied", "readouts", "hub", "cache", "token_loss", "progress")
_COUNTS = ("controls", "band", "shots", "n_items", "seed", "prompt_seeds", "batch",
           "max_prompt_tokens")  # fmt: skip
_TEXTS = ("heads", "score", "suite", "exclude", "mode", "mean_over", "controls_shape")

#: The most --shots, --n-items and --max-prompt-tokens accept: bounds that keep prompt
#: building and its arithmetic finite (generators stop at the prompt budget in any case).
MAX_COUNT = 1_000_000


def prompt_budget(loaded) -> int:
    """Longest prompt, in tokens, for generated suites: a zoo model's training sequence length
    (its card), else the model's context capped at :data:`MAX_PROMPT_TOKENS`. The CLI,
    notebooks and benchmarks all go through :func:`ablation.ablate`, so they share it."""
    card = loaded.card if isinstance(loaded.card, dict) else {}
    seq_len = (card.get("config") or {}).get("seq_len")
    return int(seq_len) if seq_len else min(int(loaded.info.n_ctx), MAX_PROMPT_TOKENS)
