"""Orchestration: choose heads, evaluate every task clean / ablated / under random controls.

:func:`plan_heads` picks the target heads (top ``frac`` by a detector score, or an explicit
list) and the random control sets; :func:`run_ablation` evaluates each task once clean, once
with the target heads ablated and once per control, reusing cached results, and returns the
raw results that :mod:`ablation.report` turns into the per-task table.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ablation.config import AblationMode, ControlsShape, MeanOver
from ablation.engine import ENGINE_VERSION, Engine, ResultCache, ablation_key, fits
from ablation.hooks import HeadAblation, tie_heads
from ablation.report import task_key
from ablation.results import CLEAN, TARGET, TaskResults, control_label, shaped_label
from ablation.selection import (
    band_half_width,
    describe,
    layer_profile,
    n_selected,
    parse_heads,
    random_controls,
    shaped_controls,
    tied_scores,
    top_frac,
    top_k,
)
from ablation.tasks.base import Task
from induction.errors import InputError
from induction.heads import head_label
from induction.scores.score_names import HEAD_SCORE_PROVIDERS, register_head_score

if TYPE_CHECKING:
    from ablation.tasks.base import LmEvalTask


@dataclass
class HeadPlan:
    target: list[tuple[int, int]]
    controls: list[list[tuple[int, int]]]
    selection: str
    scores: pd.DataFrame | None = None
    tied: bool = False
    unrolled_layers: list[tuple[int, int]] | None = None  # (block layer, pass); when tied
    # controls with the target's heads-per-layer profile (selection.shaped_controls)
    shaped: list[list[tuple[int, int]]] = field(default_factory=list)
    band: int | None = None
    notes: list[str] = field(default_factory=list)  # said on stderr and kept in the report

    def head_sets(self) -> list[tuple[str, list[tuple[int, int]]]]:
        """``(label, heads)`` of the target, every uniform and every shaped control."""
        return (
            [(TARGET, self.target)]
            + [(control_label(i), c) for i, c in enumerate(self.controls)]
            + [(shaped_label(i), c) for i, c in enumerate(self.shaped)]
        )

    def expand(self, heads: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Heads actually hooked (all passes of a tied looped model)."""
        if not self.tied:
            return list(heads)
        if self.unrolled_layers is None:
            raise ValueError("a tied head plan needs the model's unrolled layers")
        return tie_heads(heads, self.unrolled_layers)


@dataclass
class RunResult:
    """Every task instance evaluated clean, with the target heads ablated and under each
    control: ``results[task_key(task)][label]`` is an :class:`EvalResult`."""

    tasks: Sequence[Task | LmEvalTask]
    plan: HeadPlan
    results: dict[str, TaskResults]
    meta: dict = field(default_factory=dict)
    cached: int = 0  # results reused from the resume cache


#: Head scores beyond the detector's, by name
#: (``induction.scores.score_names.HEAD_SCORE_PROVIDERS``,
#: the ground floor's registry: ``induction.circuits.fv`` registers ``fv``, so ``--score fv`` and
#: ``--exclude fv:0.02`` work without this package importing it).
SCORE_PROVIDERS = HEAD_SCORE_PROVIDERS
register_score = register_head_score


def compute_scores(
    loaded,
    score: str = "induction",
    progress: bool = False,
    cache_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Detector scores per head (``induction.scores.scan.induction_scores`` with its defaults, only
    the column used for ranking). With ``cache_dir`` the scores are kept beside the result
    cache so a resumed run ranks heads identically without rescoring."""
    from induction.scores.scan import induction_scores

    check_score_name(score)
    cached = None
    if cache_dir is not None:
        cached = Path(cache_dir) / f"{model_fingerprint(loaded)}.scores-{score}.csv"
        shape = (loaded.info.n_layers, loaded.info.n_heads)
        df = _read_cached_scores(cached, score, shape)
        if df is not None:
            import sys

            print(
                f"reusing cached {score} scores of {loaded.info.name} from {cached} "
                "(--no-cache recomputes)",
                file=sys.stderr,
            )
            return df
    if score in SCORE_PROVIDERS:
        df = SCORE_PROVIDERS[score](loaded)
    else:
        df = induction_scores(loaded, scores=[score], progress=progress)
    if cached is not None:
        _write_cached_scores(df[[c for c in ("layer", "head", score) if c in df.columns]], cached)
    return df


def check_score_name(score: str, table: pd.DataFrame | None = None) -> None:
    """Refuse a score no table column holds and no scorer computes (one line, before work)."""
    from induction.scores.score_names import HEAD_SCORES

    if score in HEAD_SCORES:
        return
    if table is not None and score in table.columns:
        return
    known = ", ".join(HEAD_SCORES)
    raise InputError(
        f"unknown score {score!r}; available: {known} (a table with that column via --scores, "
        "or induction.scores.score_names.register_head_score)"
    )


def check_scores_before_work(
    score: str, exclusion: tuple[str, float] | None, scores: pd.DataFrame | None, where: str
) -> None:
    """Before the model loads: the ranking score and the ``--exclude`` score are known (a
    scorer or a column of ``scores``), and every column of ``scores`` they read is whole
    (:func:`check_score_columns`); the model's shape is checked once it is loaded."""
    names = [score, *([exclusion[0]] if exclusion else [])]
    for name in names:
        check_score_name(name, scores if isinstance(scores, pd.DataFrame) else None)
    if scores is not None:
        read = [n for n in names if n == score or n in scores.columns]
        check_score_columns(scores, read, where)


def check_score_columns(scores: pd.DataFrame, columns, where: str = "the score table") -> None:
    """The checks a score table passes before any work, whatever the model: ``layer``,
    ``head`` and every column in ``columns`` (the ones a command reads: ``--score``, the
    ``--exclude`` score) present; at least one row; whole, non-negative layer and head numbers,
    each head once; a finite number in every cell of ``columns`` (docs/safety.md)."""
    if not isinstance(scores, pd.DataFrame):
        raise InputError(
            f"{where} must be a pandas DataFrame with layer, head and score columns, got "
            f"{type(scores).__name__}; read a file with induction.store.io.read_table"
        )
    columns = list(dict.fromkeys(columns))
    missing = [c for c in ("layer", "head", *columns) if c not in scores.columns]
    if missing:
        raise InputError(
            f"{where} has no {', '.join(missing)} column; it needs layer, head, "
            f"{', '.join(columns)}"
        )
    if scores.empty:
        raise InputError(f"{where} names no head; pass a table with a row for every head")
    for col in ("layer", "head", *columns):
        values = pd.to_numeric(scores[col], errors="coerce")
        bad = scores[col][values.isna() & scores[col].notna()] if col in columns else None
        if col in ("layer", "head"):
            wrong = scores[col][values.isna() | (values % 1 != 0) | (values < 0)]
            if len(wrong):
                raise InputError(
                    f"{where}'s {col} column holds {wrong.iloc[0]!r}, not a head index; "
                    "layers and heads are whole numbers from 0"
                )
        elif bad is not None and len(bad):
            raise InputError(
                f"{where}'s {col} column holds {bad.iloc[0]!r}, not a number; "
                f"every {col} score must be a finite number"
            )
        elif not values.map(math.isfinite).all():
            raise InputError(
                f"{where}'s {col} column holds NaN or infinite values; every {col} score must "
                "be a finite number"
            )
    pairs = scores[["layer", "head"]].apply(pd.to_numeric).astype(int)
    twice = pairs[pairs.duplicated()]
    if len(twice):
        name = head_label(int(twice.iloc[0]["layer"]), int(twice.iloc[0]["head"]))
        raise InputError(f"{where} lists head {name} twice; once each")


def check_score_table(
    scores: pd.DataFrame, score, n_layers: int, n_heads: int, where: str = "the score table"
) -> None:
    """A head-score table given by the caller: :func:`check_score_columns` for ``score`` (a
    column name or several), then the model's shape: every head of its ``n_layers`` x
    ``n_heads`` once, none outside it. Anything else would rank heads that do not exist,
    twice, by nothing, or only some of them."""
    columns = [score] if isinstance(score, str) else list(score)
    check_score_columns(scores, columns, where)
    pairs = scores[["layer", "head"]].apply(pd.to_numeric).astype(int)
    layer, head = pairs["layer"], pairs["head"]
    outside = pairs[(layer >= n_layers) | (head >= n_heads)]
    if len(outside):
        name = head_label(int(outside.iloc[0]["layer"]), int(outside.iloc[0]["head"]))
        raise InputError(
            f"{where} names head {name}, outside the model's {n_layers} layers x "
            f"{n_heads} heads; score this model's heads"
        )
    if len(pairs) != n_layers * n_heads:
        raise InputError(
            f"{where} scores {len(pairs)} of the model's {n_layers * n_heads} heads; "
            "it must list every head once"
        )


def _check_controls_possible(n_target: int, pool, info) -> None:
    """Random controls need heads outside the target set; refuse a target of every head."""
    n_pool = len(pool) if pool is not None else info.n_layers * info.n_heads
    if n_target >= n_pool:
        raise InputError(
            f"the target set takes all {n_pool} heads, so no heads remain for random controls; "
            "lower --frac (or name fewer --heads), or pass --controls 0"
        )


def _read_cached_scores(
    path: Path, score: str, shape: tuple[int, int] | None = None
) -> pd.DataFrame | None:
    """The cached score table, or None when there is none or it is damaged: its content hash
    does not match (:func:`induction.store.cache_integrity.intact`), it is not CSV, lacks the
    ``layer``/``head``/``score`` columns, has non-numeric cells, an all-NaN score or, with
    ``shape`` (layers, heads), not every head exactly once. A damaged table is noted on
    stderr and removed, so the recomputed one replaces it."""
    from induction.store.cache_integrity import discard, intact, note_damaged

    if not intact(path):
        return None
    try:
        df = pd.read_csv(path)
        ok = {"layer", "head", score} <= set(df.columns) and len(df) > 0
        ok = ok and all(pd.api.types.is_numeric_dtype(df[c]) for c in ("layer", "head", score))
        ok = ok and bool(df[score].notna().any())
        if ok and shape is not None:
            n_layers, n_heads = shape
            heads = set(zip(df["layer"].tolist(), df["head"].tolist(), strict=True))
            grid = {(la, h) for la in range(n_layers) for h in range(n_heads)}
            ok = len(df) == len(grid) and heads == grid
    except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError):
        ok = False
    if ok:
        return df
    note_damaged(path, "not a score table of this model")
    discard(path)  # a cache of our own making: recompute it
    return None


def _write_cached_scores(df: pd.DataFrame, path: Path) -> None:
    """Write the score table atomically with its content hash."""
    from induction.store.cache_integrity import seal
    from induction.store.io import atomic_path

    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
        seal(path, tmp)


def plan_heads(
    loaded,
    frac: float = 0.2,
    score: str = "induction",
    heads: str | None = None,
    n_controls: int = 5,
    seed: int = 0,
    match_layers: bool = False,
    tied: bool = False,
    scores: pd.DataFrame | None = None,
    cache_dir: str | Path | None = None,
    controls_shape: ControlsShape = "uniform",
    band: int | None = None,
    log=None,
    exclude: tuple[str, float] | None = None,
) -> HeadPlan:
    """The target heads and the random controls: ``n_controls`` uniform sets
    (``controls_shape`` ``uniform`` or ``both``) and ``n_controls`` sets with the target's
    layer profile (``layer`` or ``both``; :func:`ablation.selection.shaped_controls`).

    ``exclude=(score, frac)``: leave the top ``frac`` heads by another score out of the target
    and of every control (Yin and Steinhardt 2025's exclusion: rank by FV score without the top
    induction heads, or the reverse); the target keeps ``ceil(frac x all heads)`` heads."""
    info = loaded.info
    for name, value in (("n_controls", n_controls), ("seed", seed)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"{name} must be an integer >= 0, got {value!r}")
    unrolled: list[tuple[int, int]] = []  # (block layer, pass) per unrolled layer, when tied
    if tied:
        plan = loaded.loop_plan
        if plan is None:
            raise InputError("--tied needs a looped model (one with a loop plan); drop --tied")
        unrolled = list(plan.unrolled_layers)
    pool = None
    if heads is not None and exclude is not None:
        raise InputError("--exclude applies to --frac selection; drop --heads or --exclude")
    if heads is not None:  # an empty --heads is an error, not a silent fall-back to --frac
        target = parse_heads(heads, info.n_layers, info.n_heads)
        selection = f"explicit ({len(target)} heads)"
        if tied:
            target = sorted({(_first_pass(unrolled, la), h) for la, h in target})
    else:
        if not tied and n_controls > 0:  # refuse before scoring when --frac takes every head
            _check_controls_possible(n_selected(frac, info.n_layers * info.n_heads), None, info)
        if scores is None:
            if log:
                log(
                    f"ranking {info.n_layers * info.n_heads} heads by {score} score (a table "
                    "from `induction scan --out` or `induction fv --out`, passed as --scores, "
                    "skips this)"
                )
            # progress when a log listens: on a real model this scan takes minutes
            scores = compute_scores(
                loaded, score=score, cache_dir=cache_dir, progress=log is not None
            )
        else:
            read = [score, *([exclude[0]] if exclude and exclude[0] in scores.columns else [])]
            check_score_table(scores, read, info.n_layers, info.n_heads)
        table = tied_scores(scores, unrolled) if tied else scores
        excluded: list[tuple[int, int]] = []
        if exclude is not None:
            ex_score, ex_frac = exclude
            if ex_score not in table.columns:
                extra = compute_scores(loaded, score=ex_score, cache_dir=cache_dir)
                extra = tied_scores(extra, unrolled) if tied else extra
                table = table.merge(extra[["layer", "head", ex_score]], on=["layer", "head"])
            excluded = top_frac(table, ex_frac, ex_score)
            keep = ~table.set_index(["layer", "head"]).index.isin(excluded)
            k = n_selected(frac, len(table))  # a share of all heads, as without exclusion
            target = top_k(table[keep], k, score)
            selection = (
                f"top {frac:g} by {score} ({len(target)} of {len(table)} heads), excluding the "
                f"top {ex_frac:g} by {ex_score} ({len(excluded)} heads)"
            )
        else:
            target = top_frac(table, frac, score)
            selection = f"top {frac:g} by {score} ({len(target)} of {len(table)} heads)"
    if tied:
        firsts = sorted({_first_pass(unrolled, i) for i in range(len(unrolled))})
        pool = [(la, h) for la in firsts for h in range(info.n_heads)]
    if heads is None and exclude is not None and excluded:
        universe = pool if pool is not None else [
            (la, h) for la in range(info.n_layers) for h in range(info.n_heads)
        ]  # fmt: skip
        pool = [h for h in universe if h not in set(excluded)]  # controls from the same pool
    if n_controls > 0:
        _check_controls_possible(len(target), pool, info)
    controls = random_controls(
        target,
        info.n_layers,
        info.n_heads,
        n_controls if controls_shape in ("uniform", "both") else 0,
        seed=seed,
        match_layers=match_layers,
        pool=pool,
    )
    notes = []
    n_pool = len(pool) if pool is not None else info.n_layers * info.n_heads
    if controls and not match_layers and 2 * len(target) > n_pool:
        notes.append(
            f"the target takes {len(target)} of {n_pool} heads, so each uniform control of "
            f"{len(target)} heads shares at least {2 * len(target) - n_pool} with it; lower "
            "--frac for controls apart from the target"
        )
    band = band_half_width(info.n_layers) if band is None else band
    shaped = shaped_controls(
        target,
        info.n_layers,
        info.n_heads,
        n_controls if controls_shape in ("layer", "both") else 0,
        seed=seed + 100_000,  # a stream apart from the uniform controls'
        band=band,
        pool=pool,
    )
    return HeadPlan(
        target=target,
        controls=controls,
        selection=selection,
        scores=scores,
        tied=tied,
        unrolled_layers=unrolled if tied else None,
        shaped=shaped,
        band=band,
        notes=notes,
    )


def _first_pass(unrolled: list[tuple[int, int]], layer: int) -> int:
    block = unrolled[layer][0]
    return next(i for i, (b, _) in enumerate(unrolled) if b == block)


#: The ablation run: its code and every whole package it depends on decide cached results
#: (the engine, readouts, hooks, KV cache, task generators, zoo corpus, the detectors and
#: providers behind head scores; :func:`induction.store.fingerprint.code_packages`, docs/safety.md).
CODE_MODULES = ("ablation.pipeline",)


def model_fingerprint(loaded) -> str:
    """Content fingerprint of the model files (configs, weights, tokenizer, loop plan, card,
    duplication log; a GGUF's content; a model object's state dict), dtype, device type and
    the code behind :data:`CODE_MODULES`
    (:func:`induction.models.model_types.model_fingerprint`)."""
    from induction.models.model_types import model_fingerprint as fingerprint

    return fingerprint(loaded, CODE_MODULES, engine_version=ENGINE_VERSION)


def default_cache_path(loaded) -> Path:
    """``<cache root>/ablate/<model fingerprint>.jsonl``."""
    from induction.store.fingerprint import cache_root

    return cache_root() / "ablate" / f"{model_fingerprint(loaded)}.jsonl"


def run_ablation(
    loaded,
    tasks: list[Task],
    plan: HeadPlan,
    mode: AblationMode = "zero",
    mean_over: MeanOver = "all",
    engine: Engine | None = None,
    cache: ResultCache | None = None,
    progress: bool = True,
    log=None,
) -> RunResult:
    """Evaluate ``tasks`` clean, with ``plan.target`` ablated and under each control.
    ``log`` gets the run's size before it starts and a time estimate after the first
    evaluation (one line each)."""
    engine = engine or Engine(loaded.bridge, loaded.tokenizer)
    cache = cache or ResultCache(None)
    sets = plan.head_sets()
    results: dict[str, TaskResults] = {}
    prepared = [engine.prepare(t) for t in tasks]
    todo, misfits = [], 0
    for prep in prepared:
        results[task_key(prep.task)] = TaskResults()
        for label, heads in [(CLEAN, [])] + sets:
            hooked = plan.expand(heads)
            key = cache.key(prep.fingerprint, ablation_key(hooked, mode, mean_over))
            hit = cache.get(key)
            if hit is not None and not fits(prep.task, hit):
                misfits += 1
                hit = None
            if hit is not None:
                results[task_key(prep.task)][label] = hit
            else:
                todo.append((prep, label, hooked, key))
    if misfits:
        from induction.store.cache_integrity import note_damaged

        s = "" if misfits == 1 else "s"
        where = cache.path or "the run's in-memory cache"
        note_damaged(where, f"{misfits} result{s} that do not fit their task")
    n_batches = sum(len(p.batches) for p, *_ in todo)
    bar = _progress(progress, n_batches)
    by_prep: dict[int, list] = {}
    for entry in todo:
        by_prep.setdefault(id(entry[0]), []).append(entry)
    # every head set of a task in as few passes as memory allows (Engine.evaluate_sets), and
    # the passes taken from each task in turn, so the first estimate has seen every task
    per_task = []
    for group in by_prep.values():
        k = engine.sets_per_pass(group[0][0], len(group))
        per_task.append([(group, s, k) for s in range(0, len(group), k)])
    passes = [p for turn in itertools.zip_longest(*per_task) for p in turn if p is not None]
    estimate = _Estimate(
        log,
        [(id(g[0][0]), _batch_weights(g[0][0]), len(g)) for g in by_prep.values()],
        len(prepared),
        1 + len(sets),
        controls=any(label not in (CLEAN, TARGET) for _, label, _, _ in todo),
    )
    with bar as advance:
        for group, start, k in passes:
            prep = group[0][0]
            chunk = group[start : start + k]
            labels = [label for _, label, _, _ in chunk]
            advance.describe(f"{prep.task.name} [{_labels_text(labels, k)}]")
            ablations = []
            for _, _, hooked, _ in chunk:
                ablation = None
                if hooked:
                    means = (
                        engine.means_for(prep, sorted({la for la, _ in hooked}), mean_over)
                        if mode == "mean"
                        else None
                    )
                    ablation = HeadAblation(hooked, mode, means, mean_over)
                ablations.append(ablation)

            def finished(i, res, chunk=chunk, prep=prep):
                _, label, hooked, key = chunk[i]
                res.heads = describe(hooked)
                cache.put(key, res)
                results[task_key(prep.task)][label] = res

            def batch_done(
                prep=prep,
                n=len(chunk),
                control=any(label not in (CLEAN, TARGET) for label in labels),
                ticks=itertools.count(),
            ):
                i = next(ticks)  # n calls per batch, one per head set, at its end
                if i % n == n - 1:
                    estimate.tick(id(prep), i // n, n, control)
                if estimate.left_s is not None:  # before advance(): its line says it
                    advance.left(estimate.left_s)
                advance()

            engine.evaluate_sets(prep, ablations, on_batch=batch_done, on_result=finished)
    meta = run_meta(loaded, plan, mode, mean_over, engine.timer.total_s, engine.timer.forward_s)
    meta["evaluation_seconds"] = round(time.perf_counter() - estimate.start, 1)
    if estimate.first_s is not None:  # its first estimate of that, to check it against
        meta["first_estimate_seconds"] = round(estimate.first_s, 1)
    n_cached = sum(len(r.by_label) for r in results.values()) - len(todo)
    return RunResult(tasks=tasks, plan=plan, results=results, meta=meta, cached=n_cached)


def _labels_text(labels: list[str], per_pass: int) -> str:
    """``clean, target, ...`` for the progress line, with the head sets per pass."""
    text = ", ".join(labels) if len(labels) <= 3 else f"{labels[0]} .. {labels[-1]}"
    return f"{text}; {per_pass} per pass" if len(labels) > 1 else text


def run_meta(loaded, plan: HeadPlan, mode, mean_over, total_s: float, forward_s: float) -> dict:
    """What a run ablated and against what, for the report's ``meta``."""
    return {
        "model": loaded.info.name,
        "selection": plan.selection,
        "heads": describe(plan.target),
        "controls": [describe(c) for c in plan.controls],
        "shaped_controls": [describe(c) for c in plan.shaped],
        "target_profile": layer_profile(plan.target),
        "band": plan.band,
        "mode": mode,
        "mean_over": mean_over if mode == "mean" else None,
        "tied": plan.tied,
        "engine_seconds": round(total_s, 2),
        "forward_seconds": round(forward_s, 2),
    }


def _batch_weights(prep) -> list[float]:
    """Relative cost of each of ``prep``'s batches for one head set: its rows times the
    tokens each row runs through (prompt width plus decode steps). Batches are sorted by
    prompt length, so the first ones are the cheapest; tasks differ in width and steps."""
    steps = getattr(prep.task, "max_new_tokens", 0)
    return [float(len(idx) * (ids.shape[1] + steps)) for idx, ids, _ in prep.batches]


class _Estimate:
    """The run's size up front, then the time it takes, re-estimated as it goes.

    Each task's pace (seconds per unit of :func:`_batch_weights`) is measured on its own
    batches, so tasks that differ in prompt length, decode steps and head sets per pass
    each count at their own pace; a task not yet sampled counts at the pooled pace. Once a
    task has run a pass with a control set, its passes with one set its pace: the clean and
    target sets run first, so the rest is controls. The
    first estimate waits until every task has run one pass over its batches
    (``run_ablation`` takes one pass from each task in turn) and, where controls are to run,
    one pass with a control set (the clean and target sets alone mislead: their generation
    stops at other steps), or :data:`FIRST_BY_S` seconds; and it has run
    :data:`FIRST_AFTER_S` seconds or :data:`FIRST_SHARE` of the batches.
    Later a ``re-estimate`` line follows whenever the time left moves by more than
    :data:`MOVE` of the last one said (and by 10 s).
    ``left_s`` is the current estimate of the seconds left (the progress bar's ETA)."""

    FIRST_BY_S = 60.0
    #: ... and, unless it has run this share of the batches, at least this long
    FIRST_AFTER_S, FIRST_SHARE = 20.0, 0.10
    MOVE = 0.25

    def __init__(
        self,
        log,
        tasks,
        instances: int,
        head_sets: int,
        controls: bool = False,
        clock=time.perf_counter,
    ):
        """``tasks``: ``(key, batch weights, head sets still to run)`` per task;
        ``controls``: whether control sets are among them."""
        self.log, self.clock = log, clock
        self.control_pending = controls  # no batch with a control set has run yet
        self.weights = {key: w for key, w, _ in tasks}
        self.left_w = {key: sum(w) * n for key, w, n in tasks}  # work left per task
        self.done_w = dict.fromkeys(self.weights, 0.0)
        self.spent = dict.fromkeys(self.weights, 0.0)
        self.control_w = dict.fromkeys(self.weights, 0.0)  # the same, on passes with a control
        self.control_s = dict.fromkeys(self.weights, 0.0)
        self.runs = sum(len(w) * n for _, w, n in tasks)
        self.ran, self.left_s, self.said = 0, None, None  # said: (left, when)
        self.first_s: float | None = None  # the first estimate of the whole run's seconds
        self.start = self.last = clock()
        if log and self.runs:
            evaluations = sum(n for *_, n in tasks)
            log(
                f"size: {instances} task instance(s) x {head_sets} head sets (clean, target, "
                f"controls) = {evaluations} evaluations still to run, {self.runs} batches; "
                "--n-items, --controls, --task or --device cuda make it smaller"
            )

    def tick(self, key, batch: int, sets: int = 1, control: bool = False) -> None:
        """``sets`` head sets' run of batch ``batch`` of task ``key`` is done; ``control``:
        a control set was among them."""
        now = self.clock()
        self.control_pending = self.control_pending and not control
        w = self.weights[key][batch] * sets
        self.spent[key] += now - self.last
        self.done_w[key] += w
        if control:
            self.control_s[key] += now - self.last
            self.control_w[key] += w
        self.left_w[key] -= w
        self.last, self.ran = now, self.ran + sets
        self.left_s = self._left()
        elapsed = now - self.start
        if not self.log:
            return
        if self.said is None:
            sampled = sum(1 for k in self.weights if self.done_w[k] > 0)
            pending = [  # tasks yet to finish their first pass (or all they had to run)
                k for k in self.weights if self.done_w[k] < sum(self.weights[k]) and self.left_w[k]
            ]
            if (pending or self.control_pending) and elapsed < self.FIRST_BY_S:
                return
            if elapsed < self.FIRST_AFTER_S and self.ran < self.FIRST_SHARE * self.runs:
                return  # a few seconds' pace is the machine's load of those seconds
            tasks = f"{sampled} of {len(self.weights)} task(s)"
            self.log(
                f"estimate: about {_duration(elapsed + self.left_s)} in all, "
                f"{_duration(self.left_s)} left ({self.ran} of {self.runs} batches, "
                f"{tasks}, in {_duration(elapsed)})"
            )
            self.said = (self.left_s, now)
            self.first_s = elapsed + self.left_s
            return
        before = max(0.0, self.said[0] - (now - self.said[1]))
        if (
            abs(self.left_s - before) > self.MOVE * max(before, 1.0)
            and abs(self.left_s - before) > 10
        ):
            self.log(
                f"re-estimate: about {_duration(elapsed + self.left_s)} in all, "
                f"{_duration(self.left_s)} left ({self.ran} of {self.runs} batches in "
                f"{_duration(elapsed)})"
            )
            self.said = (self.left_s, now)

    def _left(self) -> float:
        pooled = sum(self.spent.values()) / max(sum(self.done_w.values()), 1e-9)

        def pace(k) -> float:  # what is left of a task after its first control pass is controls
            if self.control_w[k]:
                return self.control_s[k] / self.control_w[k]
            return self.spent[k] / self.done_w[k] if self.done_w[k] else pooled

        return sum(left * pace(k) for k, left in self.left_w.items())


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class _progress:
    """An advance (``advance()``, ``.describe(text)``, ``.left(seconds)``) over
    :func:`induction.progress.progress`: a rich bar on a
    terminal, periodic one-line progress in logs and CI, nothing when disabled."""

    def __init__(self, enabled: bool, total: int):
        from induction.progress import progress

        self.enabled, self.total = enabled and total > 0, total
        self.reporter = progress(self.enabled)

    def __enter__(self):
        bar = self.reporter.__enter__()
        return bar.task(self.total, "ablate")

    def __exit__(self, *exc):
        return self.reporter.__exit__(*exc)
