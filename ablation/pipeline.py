"""The ablation experiment as one call: :func:`ablate` (``induction ablate`` runs it, and so do
the notebooks and ``benchmarks/replication.py``).

Steps: load the model, build the suite's prompts (every prompt seed), refuse a suite the
model cannot read, rank heads and draw the random controls (:func:`ablation.run.plan_heads`),
evaluate clean / ablated / each control with the batched engine and its resume cache
(:func:`ablation.run.run_ablation`), reduce to the per-task table
(:func:`ablation.report.build_report`). Kapl et al. 2025 ablate the top 20% of heads by
induction score and report the mean F1 drop over 19 few-shot tasks; see ``docs/research.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ablation.config import AblationConfig, prompt_budget
from ablation.run import HeadPlan, RunResult
from ablation.tasks.base import GenTask, Task
from induction.errors import InputError
from induction.heads import head_label
from induction.store.io import guards_inputs

if TYPE_CHECKING:
    from ablation.tasks.base import LmEvalTask
    from ablation.token_loss import TokenLossResult
    from induction.models.loading import LoadedModel
    from induction.models.specs import ModelLike

#: Share of prompt tokens mapped to the tokenizer's unknown token above which a suite is
#: refused as unreadable ("mostly unknown": natural-language tasks on the zoo's vocabulary).
MAX_UNKNOWN_SHARE = 0.5


@dataclass
class AblationResult:
    """The per-task report of one ablation run and everything behind it.

    ``to_frame()`` is the report (one row per task and metric, then ``MEAN``); ``run`` holds
    every task's clean / ablated / control results (:class:`ablation.results.EvalResult`).
    ``inputs`` are the files and folders the run read (:func:`run_inputs`): :meth:`save` and
    :meth:`plot` refuse to write over them, as ``induction ablate`` does.
    """

    model: str
    config: AblationConfig
    suite: str
    plan: HeadPlan
    run: RunResult
    report: pd.DataFrame
    meta: dict = field(default_factory=dict)
    gates: pd.DataFrame | None = None  # per task and readout (ablation.gates.task_gates)
    model_gates: list = field(default_factory=list)  # ablation.gates.ModelGate
    inputs: list[Path] = field(default_factory=list)  # read by the run: never written
    # the token-loss difference under the same head sets (config.token_loss)
    token_loss: TokenLossResult | None = None

    @property
    def tasks(self) -> Sequence[Task | LmEvalTask]:
        return self.run.tasks

    @property
    def mean_drop(self) -> float | None:
        """Mean drop over the generation tasks (the ``MEAN`` row), None without one."""
        from ablation.report import overall_drop

        return overall_drop(self.report)

    @property
    def title(self) -> str:
        source = f"--lm-eval {self.suite[8:]}" if self.config.lm_eval else f"--suite {self.suite}"
        return f"induction ablate {self.model} {source}: {self.plan.selection}, {self.config.mode}"

    def to_frame(self) -> pd.DataFrame:
        return self.report.copy()

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """Write the report atomically: ``.csv``/``.parquet``/``.jsonl`` rows, or ``.json``
        with the run's settings and head sets under ``meta``. A path that is, lies inside or
        contains one of the run's ``inputs`` (the model's folder, task files, lm-eval task
        configs and their data) is refused with :class:`~induction.errors.InputError`."""
        from ablation.report import write_report

        return write_report(self.report, path, self.meta)

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """The drop per task against the random controls (plotly figure; written when
        ``path`` is given, refused over the run's ``inputs`` as in :meth:`save`)."""
        from ablation.render import report_figure, save_report_figure

        fig = report_figure(self.report, title=self.title)
        if path is not None:
            save_report_figure(fig, path)
        return fig

    def gate_lines(self) -> list[str]:
        """The validity gates, one line each, PASS or FAIL first and why after: the model's,
        then each readout's suite gate."""
        from ablation.gates import suite_gate

        lines = []
        for g in self.model_gates:
            state = "N/A " if g.passed is None else ("PASS" if g.passed else "FAIL")
            lines.append(f"{state} gate {g.name}: {g.detail}")
        if self.gates is not None and not self.gates.empty:
            for readout in [
                None,
                *[r for r in ("cand_acc", "logprob") if r in set(self.gates.readout)],
            ]:
                s = suite_gate(self.gates, readout)
                state = "PASS" if s["passed"] else "FAIL"
                sat = "mean drop saturated; " if s.get("saturated") else ""
                lines.append(
                    f"{state} gate {s['readout']}: {sat}{s['above_chance']} of {s['tasks']} "
                    "tasks above chance (needs most)"
                )
        return lines

    def verdict(self) -> str:
        """One sentence on the mean drop that names the failed gate instead of a number's
        reading where one fails (docs/research.md: "untestable here", never "disagrees")."""
        from ablation.gates import VERDICT_ORDER, suite_gate, verdict_readout

        failed = [g.name for g in self.model_gates if g.passed is False]
        if self.gates is not None and not self.gates.empty:
            present = [r for r in VERDICT_ORDER if r in set(self.gates.readout)]
            passes = {r: suite_gate(self.gates, r)["passed"] for r in present}
            readout = verdict_readout(passes) if present else None
            s = suite_gate(self.gates, readout)
            if not s["passed"]:
                failed.append(
                    f"{s['readout']} (above chance on {s['above_chance']} of {s['tasks']} "
                    f"tasks{', drop saturated' if s.get('saturated') else ''})"
                )
            key = "MEAN" if readout is None else f"MEAN[{readout}]"
        else:
            key = "MEAN"
        if failed:
            return "untestable here: the gate(s) " + "; ".join(failed) + " failed"
        row = self.report[self.report.task == key]
        if row.empty:
            return "no measured mean"
        r = row.iloc[0]
        line = (
            f"{key} drop {r['drop']:+.3f} against uniform random heads {r.ctrl_mean:+.3f} "
            f"(p {r.p_ctrl:.2f}) and layer-shaped random heads {r.shaped_mean:+.3f} "
            f"(p {r.p_shaped:.2f})"
        )
        floor = 1 / (self.config.controls + 1)  # the target ranks first among n + 1 sets
        if floor > 0.05:
            line += (
                f"; with {self.config.controls} random sets p cannot go below {floor:.2f}, so "
                "p <= 0.05 is out of reach (use --controls 19 or more)"
            )
        return line

    def print(self, console=None) -> None:
        """The report as a rich table (stdout by default)."""
        from ablation.render import print_table

        print_table(self.report, title=self.title, console=console)


def ablate(
    model: ModelLike,
    config: AblationConfig | Mapping[str, Any] | None = None,
    /,
    *,
    scores: pd.DataFrame | None = None,
    log: Callable[[str], None] | None = None,
    **overrides: Any,
) -> AblationResult:
    """Ablate the top heads of ``model`` (a spec or a :class:`~induction.LoadedModel`) and
    measure the per-task drop against random controls.

    The one job signature (:mod:`induction.jobs`): ``config`` is an :class:`AblationConfig`
    or a dict of its fields, and keyword ``overrides`` replace fields (``frac=0.1,
    controls=50, device="cpu", progress=False``). Two keyword-only inputs are not settings
    and so have no config field: ``scores`` (a detector table with ``layer``, ``head`` and
    the score column, which skips the scan that ranks heads) is data, too large to hash into
    a frozen config, and ``log`` is a callback that receives one-line diagnostics (the heads
    chosen, reused cache entries; the CLI sends them to stderr). Reused cache entries are
    announced on stderr even without ``log``.
    """
    from ablation.engine import Engine, ResultCache
    from ablation.run import default_cache_path, run_ablation
    from ablation.tasks import SUITES, default_suite
    from induction.jobs import job_config

    if config is not None and not isinstance(config, AblationConfig | Mapping):
        raise InputError(
            f"config must be an AblationConfig, got {type(config).__name__}; pass "
            "AblationConfig(...) or settings as keywords (frac=0.1, ...)"
        )
    cfg = job_config(AblationConfig, config, overrides, "ablation")
    say = log or (lambda _msg: None)
    if cfg.lm_eval is not None:
        return _ablate_lm_eval(model, cfg, scores, log)
    if cfg.suite is not None and cfg.suite not in SUITES:
        suite_path = Path(cfg.suite)
        if not (cfg.suite.endswith(".jsonl") or suite_path.is_file()):
            raise InputError(
                f"unknown suite {cfg.suite!r}; use one of {', '.join(SUITES)} or a "
                "path to a JSONL task file"
            )
    if cfg.heads is None:  # scores and score tables fail before the model loads
        from ablation.run import check_scores_before_work

        check_scores_before_work(cfg.score, cfg.exclusion(), scores, "the scores table")
    tasks = None
    if cfg.suite is not None and cfg.suite not in ("zoo", "zoo19", "zootrain", "zoo4g", "regbench"):
        tasks = build_tasks(cfg, cfg.suite)  # bad task files fail before the model loads
    loaded = _loaded(model, cfg.device, cfg.dtype, cfg.trust_remote_code)
    suite = cfg.suite or default_suite(loaded.info, getattr(loaded, "card", None))
    if tasks is None:
        tasks = build_tasks(cfg, suite, loaded)
    check_readable(tasks, loaded.tokenizer, suite)
    fitted = check_prompt_fit(tasks, loaded, cfg, suite)
    if fitted:
        say(f"note: {fitted}")
    cache_path = default_cache_path(loaded) if cfg.cache else None
    plan = plan_for(loaded, cfg, scores, cache_path, log=say)
    silent = silent_targets(loaded, plan, seed=cfg.seed)
    say(plan_line(loaded, cfg, plan, f"suite {suite}", tasks))
    cache = ResultCache(cache_path)
    engine = Engine(
        loaded.bridge,
        loaded.tokenizer,
        batch_size=cfg.batch,
        readouts=cfg.readouts,
        head_sets_per_pass=cfg.head_sets_per_pass,
    )
    run = run_ablation(
        loaded,
        tasks,
        plan,
        mode=cfg.mode,
        mean_over=cfg.mean_over,
        engine=engine,
        cache=cache,
        progress=cfg.progress,
        log=log,
    )
    for note in plan.notes:  # never silent: on stderr even without ``log``
        (log or (lambda msg: print(msg, file=sys.stderr)))(f"note: {note}")
    if silent["note"]:
        say(f"note: {silent['note']}")
    announce_reuse(log, run.cached, cache_path)
    from ablation.report import build_report

    report = build_report(run)
    gates, model_gates = _gates(loaded, tasks, run, plan)
    meta = {**run.meta, "suite": suite, "config": cfg.to_dict(), "cached_results": run.cached}
    meta["gates"] = gates.to_dict(orient="records")
    meta["model_gates"] = [
        {"name": g.name, "passed": g.passed, "detail": g.detail} for g in model_gates
    ]
    meta["prompt_tokens_max"] = _prompt_limit(cfg, loaded, suite)
    meta["output_norm"] = {k: v for k, v in silent.items() if k != "note"}
    if plan.notes or silent["note"]:
        meta["notes"] = [*plan.notes, *([silent["note"]] if silent["note"] else [])]
    token_loss = None
    if cfg.token_loss:
        from ablation import token_loss as TL
        from induction.store.fingerprint import cache_root

        say("token-loss difference: clean and under every head set")
        cache = cache_root() / "token_loss" if cfg.cache else None
        token_loss = TL.run(
            loaded, plan, mode=cfg.mode, mean_over=cfg.mean_over, seed=cfg.seed, cache=cache
        )
        meta["token_loss"] = {**token_loss.summary(), **token_loss.settings}
    return AblationResult(
        model=loaded.info.name,
        config=cfg,
        suite=suite,
        plan=plan,
        run=run,
        report=report,
        meta=meta,
        gates=gates,
        model_gates=model_gates,
        inputs=run_inputs(model, cfg, loaded),
        token_loss=token_loss,
    )


def run_inputs(model, cfg: AblationConfig, loaded=None, lm_eval_inputs=()) -> list[Path]:
    """The files and folders an ablation run of ``model`` with ``cfg`` reads, which no output
    may replace (:func:`induction.store.io.check_outputs`): the model's (:func:`induction.store.io.
    model_inputs` of the spec, and the loaded model's folder or file), a ``suite`` task file,
    ``data_dir``, and ``lm_eval_inputs`` (:func:`ablation.lm_eval_backend.task_inputs`);
    absolute, so a later change of working folder does not move them."""
    from induction.models.specs import model_inputs

    found = list(model_inputs(model))
    for m in (model, loaded):
        path = getattr(getattr(m, "info", None), "path", None)
        if path:
            found.append(Path(path))
    if cfg.suite is not None and Path(cfg.suite).is_file():
        found.append(Path(cfg.suite))
    if cfg.data_dir is not None:
        found.append(Path(cfg.data_dir))
    return list(dict.fromkeys(Path(p).expanduser().absolute() for p in [*found, *lm_eval_inputs]))


def _growth_log(loaded) -> dict | None:
    """The model's ``duplication_log.json`` as JSON, None when absent or unreadable (the
    copied-head gate then reads n/a; ``induction lineage`` validates logs)."""
    import json

    path = getattr(loaded, "duplication_log_path", None)
    try:
        data = json.loads(Path(path).read_text()) if path else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _gates(loaded, tasks, run, plan):
    """Per-task gates of the run and the model's gates (docs/research.md)."""
    from ablation.gates import model_gates, task_gates
    from ablation.report import task_key
    from induction.heads import INDUCTION_THRESHOLD

    gates = task_gates(tasks, run.results, task_key)
    scores = plan.scores
    if scores is not None and "induction" in scores.columns:
        strongest = float(scores["induction"].max())
        card = loaded.card if isinstance(loaded.card, dict) else None
        log = _growth_log(loaded) if card and card.get("growth_steps") else None
        return gates, model_gates(strongest, INDUCTION_THRESHOLD, card, log)
    return gates, []


def silent_targets(loaded, plan, seed: int = 0) -> dict:
    """Which ablated heads write nothing (:mod:`induction.scores.output_norm`): their output norm on
    a few repeated-random-token prompts is below ``max(1e-6, 1e-3 x median)``. Ablating such
    a head (a LLaMA-Pro zero-output copy, docs/views.md) cannot change the model's output.

    Uses ``plan.scores``' ``output_norm`` column when the scan already has one, else measures
    on 4 prompts of prompt seed ``seed``. Returns ``threshold``, ``silent_heads`` (all silent
    heads), ``silent_ablated`` (head labels) and ``note`` (one line, or None).
    """
    from induction.scores.output_norm import (
        COLUMN,
        output_norms,
        silent_heads,
        silent_note,
        silent_threshold,
    )

    table = plan.scores
    if table is None or COLUMN not in table.columns:
        table = output_norms(loaded, batch=4, seeds=[seed])
    quiet = silent_heads(table)
    target = [(int(a), int(b)) for a, b in plan.target]
    note = silent_note(target, table, what=f"the {len(target)} ablated heads")
    return {
        "threshold": silent_threshold(table[COLUMN]),
        "silent_heads": [head_label(a, b) for a, b in quiet],
        "silent_ablated": [head_label(a, b) for a, b in target if (a, b) in set(quiet)],
        "note": note,
    }


def _ablate_lm_eval(model, cfg, scores, log) -> AblationResult:
    """:func:`ablate` on lm-evaluation-harness tasks (:mod:`ablation.lm_eval_backend`): the
    same head plan, controls, cache and report; the harness's prompts, filters and metrics."""
    from ablation import lm_eval_backend as backend
    from ablation.engine import ResultCache
    from ablation.report import build_report
    from ablation.run import default_cache_path

    say = log or (lambda _msg: None)
    suite = backend.prepare(cfg)  # unknown tasks / unreachable datasets fail before loading
    loaded = _loaded(model, cfg.device, cfg.dtype, cfg.trust_remote_code)
    backend.check_readable(suite, loaded.tokenizer)
    cache_path = default_cache_path(loaded) if cfg.cache else None
    plan = plan_for(loaded, cfg, scores, cache_path, log=say)
    label = "lm-eval " + ",".join(suite.names)
    say(plan_line(loaded, cfg, plan, label, suite.tasks))
    run = backend.run_lm_eval(
        loaded,
        suite,
        plan,
        mode=cfg.mode,
        mean_over=cfg.mean_over,
        batch_size=cfg.batch,
        cache=ResultCache(cache_path),
        progress=cfg.progress,
    )
    announce_reuse(log, run.cached, cache_path)
    meta = {**run.meta, "suite": label, "config": cfg.to_dict(), "cached_results": run.cached}
    return AblationResult(
        model=loaded.info.name,
        config=cfg,
        suite=label,
        plan=plan,
        run=run,
        report=build_report(run),
        meta=meta,
        inputs=run_inputs(model, cfg, loaded, suite.inputs),
    )


def build_tasks(cfg: AblationConfig, suite: str, loaded: LoadedModel | None = None) -> list[Task]:
    """The suite's tasks for every prompt seed (``seed``, ``seed + 1``, ...); generated
    suites need the model (its tokenizer and prompt budget)."""
    from ablation.tasks import load_suite

    kwargs: dict[str, Any] = {}
    if loaded is not None:
        kwargs = dict(
            tokenizer=loaded.tokenizer,
            bos_id=loaded.info.bos_token_id,
            max_tokens=_prompt_limit(cfg, loaded, suite),
        )
    return [
        task
        for s in range(cfg.seed, cfg.seed + cfg.prompt_seeds)
        for task in load_suite(
            suite,
            shots=cfg.shots,
            n_items=cfg.n_items,
            seed=s,
            tasks=list(cfg.tasks) if cfg.tasks else None,
            data_dir=cfg.data_dir,
            hub=cfg.hub,
            **kwargs,
        )
    ]


def check_readable(tasks: list[Task], tokenizer, suite: str) -> None:
    """Refuse a suite whose prompts are mostly unknown tokens to the model (natural-language
    tasks on the zoo's 128-word vocabulary): its scores would measure nothing."""
    prompts = [item.prompt for t in tasks if isinstance(t, GenTask) for item in t.items[:16]]
    refuse_unreadable(prompts, tokenizer, suite, "--suite zoo19 or zoo")


def refuse_unreadable(texts: list[str], tokenizer, suite: str, zoo_hint: str) -> None:
    """One refusal for every command: ``suite`` is refused when more than
    :data:`MAX_UNKNOWN_SHARE` of the tokens of ``texts`` are the tokenizer's unknown token;
    ``zoo_hint`` names the suites a zoo model reads."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return
    n_tokens = n_unknown = 0
    for text in texts:
        ids = tokenizer(text)["input_ids"]
        n_tokens += len(ids)
        n_unknown += sum(1 for i in ids if i == unk)
    if n_tokens and n_unknown / n_tokens > MAX_UNKNOWN_SHARE:
        raise InputError(
            f"suite {suite!r} is {n_unknown / n_tokens:.0%} unknown tokens for this model's "
            "vocabulary, so its scores would mean nothing; pick a suite in the model's "
            f"vocabulary (zoo models: {zoo_hint})"
        )


#: Suites whose generators fit every prompt to the budget (JSONL and natural-language suites
#: are cut from the left by the engine instead: docs/safety.md).
GENERATED_SUITES = ("zoo", "zoo19", "zootrain")


def check_prompt_fit(tasks: list[Task], loaded, cfg: AblationConfig, suite: str) -> str | None:
    """Refuse, before any work, a budget beyond the model's context or a generated prompt
    that does not fit its budget with BOS and the answer (``--shots`` too many for a task that
    cannot drop demonstrations). Returns a note when an explicit ``--shots`` was cut to fit."""
    budget = _prompt_limit(cfg, loaded, suite)
    n_ctx = int(getattr(loaded.info, "n_ctx", 0) or 0)
    if cfg.max_prompt_tokens is not None and n_ctx and cfg.max_prompt_tokens > n_ctx:
        raise InputError(
            f"--max-prompt-tokens {cfg.max_prompt_tokens} exceeds {loaded.info.name}'s "
            f"{n_ctx}-token context; use --max-prompt-tokens {n_ctx} or less"
        )
    if suite not in GENERATED_SUITES or not budget:
        return None
    for task in tasks:
        if not isinstance(task, GenTask):
            continue
        longest = max((len(i.prompt.split()) for i in task.items), default=0)
        need = 1 + longest + task.max_new_tokens
        if need > budget:
            fix = "pass fewer --shots" if cfg.shots is not None else "raise --max-prompt-tokens"
            raise InputError(
                f"{task.name} prompts need {need} tokens with BOS and the answer, beyond the "
                f"{budget}-token prompt budget of {loaded.info.name}; {fix}"
            )
    if cfg.shots is None:
        return None
    kept = [
        (t.name, t.shots_kept)
        for t in tasks
        if isinstance(t, GenTask) and t.shots_kept is not None and t.shots_kept < cfg.shots
    ]
    cut = sorted({name for name, _ in kept})
    if not cut:
        return None
    fewest = min(n for _, n in kept)
    return (
        f"--shots {cfg.shots} does not fit the {budget}-token prompt budget: {', '.join(cut)} "
        f"keep the newest demonstrations that fit (at least {fewest})"
    )


def plan_for(loaded, cfg: AblationConfig, scores, cache_path, log=None) -> HeadPlan:
    """The target heads and random controls ``cfg`` asks for (:func:`ablation.run.plan_heads`);
    detector scores are cached beside the resume cache."""
    from ablation.run import plan_heads

    return plan_heads(
        loaded,
        frac=cfg.frac,
        score=cfg.score,
        heads=cfg.heads,
        n_controls=cfg.controls,
        seed=cfg.seed,
        match_layers=cfg.match_layers,
        tied=cfg.tied,
        scores=scores,
        cache_dir=None if cache_path is None else cache_path.parent,
        controls_shape=cfg.controls_shape,
        band=cfg.band,
        log=log,
        exclude=cfg.exclusion(),
    )


def plan_line(loaded, cfg: AblationConfig, plan: HeadPlan, what: str, tasks) -> str:
    """The one-line summary of what a run ablates, against what, on which tasks."""
    return (
        f"{loaded.info.name}: {plan.selection}; ablating {heads_text(plan.target)} "
        f"({cfg.mode}); {len(plan.controls)} uniform and {len(plan.shaped)} layer-shaped "
        f"random controls; {what}, "
        f"{len({t.name for t in tasks})} tasks x {cfg.prompt_seeds} prompt seed(s)"
    )


def announce_reuse(log, n: int, cache_path) -> None:
    """Say that ``n`` results come from the resume cache: through ``log``, else on stderr
    (a cache must never serve silently)."""
    if n:
        notice = log or (lambda msg: print(msg, file=sys.stderr))
        notice(f"reusing {n} cached result(s) from {cache_path} (--no-cache recomputes)")


def heads_text(heads, limit: int = 16) -> str:
    """``L3H1, L5H0`` (every head up to ``limit``; beyond it the first ``limit`` and how many
    more, so the line never reads as if a listed head were all of them)."""
    text = ", ".join(head_label(a, b) for a, b in heads[:limit])
    if len(heads) > limit:
        text += f" and {len(heads) - limit} more"
    return f"{text} ({len(heads)} heads)"


def _prompt_limit(cfg: AblationConfig, loaded, suite: str) -> int | None:
    if cfg.max_prompt_tokens is not None:
        return cfg.max_prompt_tokens
    return prompt_budget(loaded)


def _loaded(model: Any, device: str, dtype: str | None, trust_remote_code: bool = False):
    if hasattr(model, "bridge") and hasattr(model, "info"):
        return model
    from induction.models.loading import load_model

    return load_model(model, device=device, dtype=dtype, trust_remote_code=trust_remote_code)
