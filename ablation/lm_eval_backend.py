"""lm-evaluation-harness tasks under head ablation: the ``--lm-eval`` branch of
:func:`ablation.ablate`.

:func:`prepare` resolves the task names (a folder of local task configs first, with
``include``; the harness's own task list otherwise) and loads their datasets before the model
is loaded, so a bad name or an unreachable dataset fails fast with one line.
:func:`run_lm_eval` evaluates every task clean, with the target heads ablated and under each
random control through :class:`ablation.lm_eval_model.AblatedLM` and the harness's own
``lm_eval.evaluator.evaluate`` (its prompts, filters and metrics), and returns the same
:class:`~ablation.run.RunResult` as the built-in engine, so :func:`ablation.report.build_report`
makes the same table. Each task's score is the harness's aggregate; the per-item values it
logs (``log_samples``) give ``drop_se`` where they are numbers. Results go to the same resume
cache as the engine's. See ``docs/lm-eval.md``.

``lm_eval`` is an optional dependency (``pip install 'induction-workbench[lm-eval]'``),
imported only here and in :mod:`ablation.lm_eval_model`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablation.engine import ResultCache, ablation_key
from ablation.results import CLEAN, EvalResult, TaskResults
from induction.errors import InputError

INSTALL_HINT = "pip install 'induction-workbench[lm-eval]' (or: pip install lm-eval)"
BACKEND_VERSION = 1
#: Share of unknown tokens above which a task is refused as unreadable for the model.
MAX_UNKNOWN_SHARE = 0.5
LOCAL_CONFIG_HINT = (
    "offline, give it a local task config (dataset_path: json, dataset_kwargs: "
    "{data_files: ...}) in a folder passed with --lm-eval-include; see docs/lm-eval.md"
)


def require_lm_eval():
    """The ``lm_eval`` module, or a one-line :class:`InputError` saying how to install it."""
    try:
        return importlib.import_module("lm_eval")
    except ImportError:
        raise InputError(
            f"--lm-eval needs lm-evaluation-harness, which is not installed: {INSTALL_HINT}"
        ) from None


@dataclass
class LmEvalTask:
    """One harness task at one prompt seed, shaped like the engine's tasks for the report:
    ``metric`` is the primary metric, ``metrics`` every ``(name, higher_is_better)``."""

    name: str
    metrics: list[tuple[str, bool]]
    output_type: str
    n_docs: int
    fingerprint: str
    group: str = "lm-eval"
    suite: str = "lm-eval"
    kind: str = "lm-eval"
    seed: int = 0
    items: list = field(default_factory=list)  # the evaluated docs (first 16 kept)

    @property
    def metric(self) -> str:
        return self.metrics[0][0]

    @property
    def higher_is_better(self) -> bool:
        return self.metrics[0][1]

    @property
    def in_mean(self) -> bool:
        """Generation tasks join the report's ``MEAN`` row, as the engine's do."""
        return self.output_type == "generate_until"


@dataclass
class LmEvalSuite:
    """Loaded harness tasks (``task_dict``, the harness's ``TaskManager.load`` result) and
    their report descriptors, one per task and prompt seed."""

    names: list[str]
    task_dict: dict
    tasks: list[LmEvalTask]
    limit: int | None
    shots: int | None


def prepare(cfg) -> LmEvalSuite:
    """Resolve and load ``cfg.lm_eval`` (names, tags, groups or YAML paths) offline-safely."""
    require_lm_eval()
    names = [n.strip() for n in cfg.lm_eval if n and n.strip()]
    if not names:
        raise InputError("--lm-eval names no task; e.g. --lm-eval zoo_lookup")
    include = cfg.lm_eval_include
    if include is not None and not Path(include).is_dir():
        raise InputError(f"--lm-eval-include {include} is not a folder of task configs")
    with _quiet():
        tm = _task_manager(names, include)
        task_dict = _load_tasks(tm, names)
        tasks = _describe(task_dict, cfg)
    return LmEvalSuite(names, task_dict, tasks, cfg.n_items, cfg.shots)


def _task_manager(names: list[str], include):
    from lm_eval.tasks import TaskManager

    def is_yaml(name: str) -> bool:
        return Path(name).suffix in (".yaml", ".yml") and Path(name).is_file()

    if include is not None:
        tm = TaskManager(include_path=str(Path(include).resolve()), include_defaults=False)
        if all(n in tm.all_tasks or is_yaml(n) for n in names):
            return tm
    elif all(is_yaml(n) for n in names):
        return TaskManager(include_defaults=False)
    # the harness's own task list (indexing it takes several seconds)
    return TaskManager(include_path=None if include is None else str(Path(include).resolve()))


def _load_tasks(tm, names: list[str]) -> dict:
    """``tm.load`` one name at a time, in its config's folder when its ``data_files`` are
    relative paths found there (the harness itself resolves them against the working
    directory), with one-line errors for unknown names and unreachable datasets."""
    merged: dict[str, dict] = {"tasks": {}, "groups": {}, "group_map": {}}
    for name in names:
        if name not in tm.all_tasks and not Path(name).is_file():
            raise InputError(
                f"unknown lm-eval task {name!r}; give a task, group or tag name of the "
                "harness (lm-eval ls tasks), a task YAML file, or a folder of local configs "
                "with --lm-eval-include"
            )
        folder = _data_folder(tm, name)
        try:
            with contextlib.chdir(folder) if folder else contextlib.nullcontext():
                loaded = tm.load([name])
        except InputError:
            raise
        except Exception as e:  # datasets/hub errors come in many types
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            raise InputError(
                f"lm-eval task {name!r} could not load its dataset ({type(e).__name__}: "
                f"{first}); {LOCAL_CONFIG_HINT}"
            ) from None
        for key in merged:
            merged[key].update(loaded.get(key, {}))
    if not merged["tasks"]:
        raise InputError(f"--lm-eval {','.join(names)} selects no task")
    return merged


def _data_folder(tm, name: str) -> Path | None:
    """The folder to load ``name`` from: its config's folder when its relative ``data_files``
    are found there and not in the working directory (for a tag or group, the one such folder
    of its members)."""
    index = tm.task_index
    entry = index.get(name)
    if entry is None:
        return _entry_folder(Path(name), None) if Path(name).is_file() else None
    members = [entry]
    if getattr(entry.kind, "name", "") == "TAG":  # a tag entry lists its member tasks
        members = [index[t] for t in entry.tags if t in index]
    listed = (entry.cfg or {}).get("task") if isinstance(entry.cfg, dict) else None
    if isinstance(listed, list):  # a group: its member task names
        members += [index[t] for t in listed if isinstance(t, str) and t in index]
    folders = {_entry_folder(e.yaml_path, e.cfg) for e in members if e.yaml_path}
    folders.discard(None)
    return folders.pop() if len(folders) == 1 else None


def _entry_folder(path: Path, cfg) -> Path | None:
    folder = Path(path).resolve().parent
    if cfg is None:
        from lm_eval.tasks._yaml_loader import load_yaml

        cfg = load_yaml(path, resolve_func=False)
    files = (cfg.get("dataset_kwargs") or {}).get("data_files") if isinstance(cfg, dict) else None
    values = files.values() if isinstance(files, dict) else [files] if files else []
    flat = [v for f in values for v in (f if isinstance(f, list) else [f])]
    rel = [f for f in flat if isinstance(f, str) and not Path(f).is_absolute()]
    if rel and all((folder / f).exists() for f in rel) and not all(Path(f).exists() for f in rel):
        return folder
    return None


def _group_of(task_dict: dict, task_name: str) -> str:
    for group, children in task_dict.get("group_map", {}).items():
        if task_name in children:
            return str(group)
    return "lm-eval"


def _metrics(task) -> list[tuple[str, bool]]:
    """``(report name, higher_is_better)`` per metric and filter: the harness's metric name,
    with ``,filter`` appended when the task has several filters."""
    hib = dict(task.higher_is_better())
    filters = [getattr(f, "name", "none") for f in getattr(task, "_filters", [])] or ["none"]
    return [
        (m if len(filters) == 1 else f"{m},{flt}", bool(hib[m])) for flt in filters for m in hib
    ]


def _describe(task_dict: dict, cfg) -> list[LmEvalTask]:
    out = []
    for name, task in task_dict["tasks"].items():
        _apply_shots(task, cfg.shots)
        docs = list(task.eval_docs)
        if cfg.n_items is not None:
            docs = docs[: cfg.n_items]
        config = task.dump_config() if hasattr(task, "dump_config") else {}
        for seed in range(cfg.seed, cfg.seed + cfg.prompt_seeds):
            payload = [BACKEND_VERSION, name, config, docs, cfg.n_items, cfg.shots, seed]
            fp = hashlib.sha256(
                json.dumps(payload, sort_keys=True, default=str).encode()
            ).hexdigest()[:16]
            out.append(
                LmEvalTask(
                    name=name,
                    metrics=_metrics(task),
                    output_type=str(task.get_config("output_type")),
                    n_docs=len(docs),
                    fingerprint=fp,
                    group=_group_of(task_dict, name),
                    seed=seed,
                    items=docs[:16],
                )
            )
    return out


def _apply_shots(task, shots: int | None) -> None:
    """``--shots`` as the harness's ``num_fewshot`` (a config's explicit 0 is kept, as
    ``lm_eval.simple_evaluate`` does)."""
    default = task.get_config("num_fewshot")
    if shots is not None and default != 0:
        task.set_config(key="num_fewshot", value=shots)
    elif default is None:
        task.set_config(key="num_fewshot", value=0)


def check_readable(suite: LmEvalSuite, tokenizer) -> None:
    """Refuse a task whose documents are mostly unknown tokens to the model (English tasks on
    the zoo's 128-word vocabulary), as :func:`ablation.pipeline.check_readable` does."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return
    for name, task in suite.task_dict["tasks"].items():
        docs = next((t.items for t in suite.tasks if t.name == name), [])
        n_tokens = n_unknown = 0
        for doc in docs:
            for fn in (task.doc_to_text, task.doc_to_target):
                try:
                    text = fn(doc)
                except Exception:
                    continue
                if isinstance(text, str) and text:
                    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                    n_tokens += len(ids)
                    n_unknown += sum(1 for i in ids if i == unk)
        if n_tokens and n_unknown / n_tokens > MAX_UNKNOWN_SHARE:
            raise InputError(
                f"lm-eval task {name!r} is {n_unknown / n_tokens:.0%} unknown tokens for this "
                "model's vocabulary, so its scores would mean nothing; pick tasks in the "
                "model's vocabulary (zoo models: --lm-eval induction_zoo)"
            )


def run_lm_eval(
    loaded,
    suite: LmEvalSuite,
    plan,
    mode: str = "zero",
    mean_over: str = "all",
    batch_size: int = 32,
    cache: ResultCache | None = None,
    progress: bool = True,
):
    """Every task of ``suite`` clean, with ``plan.target`` ablated and under each control
    (one harness ``evaluate`` per head set and prompt seed, cached results skipped)."""
    from lm_eval.evaluator import evaluate

    from ablation.lm_eval_model import AblatedLM
    from ablation.run import RunResult, _progress, run_meta
    from ablation.selection import describe

    cache = cache or ResultCache(None)
    lm = AblatedLM(loaded, batch_size=batch_size)
    sets = [(CLEAN, [])] + plan.head_sets()
    results: dict[str, TaskResults] = {_key(t): TaskResults() for t in suite.tasks}
    todo: list[tuple[int, str, list, dict[str, str]]] = []
    for seed in sorted({t.seed for t in suite.tasks}):
        for label, heads in sets:
            hooked = plan.expand(heads)
            missing = {}
            for task in (t for t in suite.tasks if t.seed == seed):
                key = cache.key(task.fingerprint, ablation_key(hooked, mode, mean_over))
                hit = cache.get(key)
                if hit is not None:
                    results[_key(task)][label] = hit
                else:
                    missing[task.name] = key
            if missing:
                todo.append((seed, label, hooked, missing))
    with _progress(progress, len(todo)) as (advance, describe_run), _quiet():
        for seed, label, hooked, missing in todo:
            describe_run(f"lm-eval [{label}]")
            lm.set_heads(hooked, mode, mean_over)
            tasks = {n: suite.task_dict["tasks"][n] for n in missing}
            for task in tasks.values():
                task.set_fewshot_seed(seed=seed)
            out = evaluate(
                lm=lm,
                task_dict={"tasks": tasks, "groups": {}, "group_map": {}},
                limit=suite.limit,
                bootstrap_iters=0,
                log_samples=True,
            )
            for name, key in missing.items():
                task = next(t for t in suite.tasks if t.name == name and t.seed == seed)
                res = _eval_result(out, task)
                res.heads = describe(hooked)
                cache.put(key, res)
                results[_key(task)][label] = res
            advance()
    timer = lm.engine.timer
    meta = run_meta(
        loaded, plan, mode, mean_over, timer.total_s or timer.forward_s, timer.forward_s
    ) | {"lm_eval": suite.names, "lm_eval_version": _version()}
    n_cached = sum(len(r.by_label) for r in results.values()) - sum(len(m) for *_, m in todo)
    return RunResult(
        tasks=list(suite.tasks), plan=plan, results=results, meta=meta, cached=n_cached
    )


def _key(task: LmEvalTask) -> str:
    from ablation.report import task_key

    return task_key(task)


def _eval_result(out: dict, task: LmEvalTask) -> EvalResult:
    """The harness's aggregate per metric (``scores``), its per-document values (``items``:
    NaN where a value is not a number, e.g. perplexity's ``(loglik, words)`` pairs) and, for
    generation tasks, the filtered answers."""
    agg = out["results"][task.name]
    samples = out.get("samples", {}).get(task.name, [])
    scores: dict[str, float] = {}
    items: dict[str, list[float]] = {}
    predictions = None
    for metric, _ in task.metrics:
        base, _, flt = metric.partition(",")
        by_filter = [s for s in samples if not flt or s.get("filter") == flt]
        if not flt:
            first = by_filter[0].get("filter") if by_filter else "none"
            by_filter = [s for s in by_filter if s.get("filter") == first]
            flt = first or "none"
        value = agg.get(f"{base},{flt}")
        scores[metric] = _number(value)
        by_filter.sort(key=lambda s: s["doc_id"])
        items[metric] = [_number(s.get(base)) for s in by_filter]
        if predictions is None and task.output_type == "generate_until":
            predictions = [_text(s.get("filtered_resps")) for s in by_filter]
    return EvalResult(scores=scores, items=items, predictions=predictions)


def _number(value: Any) -> float:
    if isinstance(value, bool | int | float) or type(value).__module__ == "numpy":
        try:
            return float(value)
        except (TypeError, ValueError):
            return math.nan
    return math.nan


def _text(resps: Any) -> str:
    while isinstance(resps, list | tuple) and resps:
        resps = resps[0]
    return str(resps) if resps is not None else ""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("lm_eval")
    except Exception:
        return "unknown"


@contextlib.contextmanager
def _quiet():
    """The harness's logging (below errors: its notes on defaults it fills in), its per-task
    progress bars and those of ``datasets`` off while it runs for us."""
    logger = logging.getLogger("lm_eval")
    level = logger.level
    logger.setLevel(logging.ERROR)
    patched = []
    for module_name in ("lm_eval.api.task",):
        module = importlib.import_module(module_name)
        original = getattr(module, "tqdm", None)
        if original is not None:
            module.tqdm = _silent_tqdm(original)
            patched.append((module, original))
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # "Generating test split" while loading local files
    try:
        yield
    finally:
        if bars:
            datasets.enable_progress_bars()
        logger.setLevel(level)
        for module, original in patched:
            module.tqdm = original


def _silent_tqdm(original):
    def silent(*args, **kwargs):
        kwargs["disable"] = True
        return original(*args, **kwargs)

    return silent
