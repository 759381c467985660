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

Task configs from an ``--lm-eval-include`` folder or given by path are inputs and may carry
code: :func:`task_inputs` lists every file and folder they read (the YAMLs, their
``include`` chain, their data files) for :func:`induction.store.io.check_outputs`, and refuses,
unless ``trust_remote_code``, a ``!function`` tag (the harness imports that Python file) or a
metric the harness would load from HF ``evaluate`` (a Python script). Their Jinja templates
render in a sandbox (:func:`_sandbox`) unless ``trust_remote_code``. The harness's own task
configs are installed code and trusted as such.

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
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsFloat

from ablation.config import AblationMode, MeanOver
from ablation.engine import ResultCache, ablation_key
from ablation.results import CLEAN, EvalResult, TaskResults
from ablation.tasks.base import LmEvalTask
from induction.errors import InputError

if TYPE_CHECKING:
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.result_schema import EvalResults

INSTALL_HINT = "pip install 'induction-workbench[lm-eval]' (or: pip install lm-eval)"
BACKEND_VERSION = 1
#: Share of unknown tokens above which a task is refused as unreadable for the model.
MAX_UNKNOWN_SHARE = 0.5
#: What lets task configs run code (their ``!function`` imports, HF ``evaluate`` metric
#: scripts, templates outside the sandbox).
TRUST_HINT = "rerun with --trust-remote-code if you trust it"
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
class LmEvalSuite:
    """Loaded harness tasks (``task_dict``, the harness's ``TaskManager.load`` result) and
    their report descriptors, one per task and prompt seed."""

    names: list[str]
    task_dict: dict
    tasks: list[LmEvalTask]
    limit: int | None
    shots: int | None
    inputs: list[Path] = field(default_factory=list)  # files and folders the tasks read
    trusted: bool = False  # cfg.trust_remote_code: templates render outside the sandbox


def prepare(cfg) -> LmEvalSuite:
    """Resolve and load ``cfg.lm_eval`` (names, tags, groups or YAML paths) offline-safely.

    Task configs that would run code are refused first (:func:`task_inputs`), before the
    harness loads any of them."""
    names, include = _request(cfg)
    trusted = bool(getattr(cfg, "trust_remote_code", False))
    with _quiet():
        tm = _task_manager(names, include)
        inputs = _check_sources(tm, names, include, trusted)
        with _sandbox(trusted):
            task_dict = _load_tasks(tm, names)
            tasks = _describe(task_dict, cfg)
    return LmEvalSuite(
        names, task_dict, tasks, cfg.n_items, cfg.shots, inputs=inputs, trusted=trusted
    )


def task_inputs(cfg) -> list[Path]:
    """The files and folders the ``cfg.lm_eval`` tasks read: the ``--lm-eval-include``
    folder, each task YAML outside the harness's package with its ``include`` chain, and
    their data files (``dataset_kwargs`` ``data_files``/``data_dir``, a local
    ``dataset_path``), for :func:`induction.store.io.check_outputs`. Like :func:`prepare`, refuses
    (one-line :class:`InputError`) a config that would run code without
    ``cfg.trust_remote_code``; loads no task."""
    names, include = _request(cfg)
    with _quiet():
        tm = _task_manager(names, include)
        return _check_sources(tm, names, include, bool(getattr(cfg, "trust_remote_code", False)))


def _request(cfg) -> tuple[list[str], Path | None]:
    require_lm_eval()
    names = [n.strip() for n in cfg.lm_eval if n and n.strip()]
    if not names:
        raise InputError("--lm-eval names no task; e.g. --lm-eval zoo_lookup")
    include = cfg.lm_eval_include
    if include is not None and not Path(include).is_dir():
        raise InputError(f"--lm-eval-include {include} is not a folder of task configs")
    return names, None if include is None else Path(include)


_TM_CACHE: dict = {}  # the last TaskManager: task_inputs then prepare index once


def _task_manager(names: list[str], include):
    """:func:`_new_task_manager`, reused while the names, the include folder and its YAML
    files (paths, sizes, mtimes) are unchanged: the CLI's input check and the run share one
    index."""
    key = (tuple(names), _folder_state(include), _folder_state(None, names))
    tm = _TM_CACHE.get(key)
    if tm is None:
        tm = _new_task_manager(names, include)
        _TM_CACHE.clear()
        _TM_CACHE[key] = tm
    return tm


def _folder_state(include, names=()) -> tuple:
    files = sorted(Path(include).resolve().glob("**/*.yaml")) if include is not None else []
    files += [Path(n).resolve() for n in names if Path(n).suffix in (".yaml", ".yml")]
    state = []
    for f in files:
        try:
            st = f.stat()
            state.append((str(f), st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            state.append((str(f), None))
    return (None if include is None else str(Path(include).resolve()), tuple(state))


def _new_task_manager(names: list[str], include):
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
            if _is_sandbox_error(e):
                raise _sandbox_refusal(name, e) from None
            unreadable = _unreadable_data(e)
            if unreadable is not None:  # a local data file the harness found but cannot parse
                raise InputError(
                    f"lm-eval task {name!r}: its data file could not be read ({unreadable}); "
                    "fix the file (JSON lines: one object per line) or the task's data_files"
                ) from None
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


def _unreadable_data(e: BaseException | None) -> str | None:
    """The parse error behind a ``datasets`` generation error, when a local file's content is
    what failed (pyarrow's ``ArrowInvalid``, a JSON or CSV error), as one short line."""
    seen = 0
    while e is not None and seen < 8:
        if type(e).__name__ in ("ArrowInvalid", "JSONDecodeError", "ParserError"):
            return (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        e, seen = (e.__cause__ or e.__context__), seen + 1
    return None


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


# ---------------------------------------------------------------- config files: inputs, code


def _check_sources(tm, names: list[str], include: Path | None, trusted: bool) -> list[Path]:
    """The inputs of :func:`task_inputs`; a config that would run code is refused unless
    ``trusted``. Every YAML file the harness will load for ``names`` (through tags, groups and
    ``include`` chains) is read and parsed here first, without resolving any tag."""
    inputs: list[Path] = [include] if include is not None else []
    for path in _config_files(tm, names):
        scan = _ConfigScan.of(path)
        if not trusted:
            scan.refuse_code()
        inputs += scan.files + scan.data
    return list(dict.fromkeys(inputs))


def _harness_dir() -> Path:
    import lm_eval.tasks

    return Path(lm_eval.tasks.__file__).resolve().parent


def _config_files(tm, names: list[str]) -> list[Path]:
    """The YAML files the harness loads for ``names``, except its own (installed code): each
    name's config, a tag's tasks, a group's members (recursively), a given YAML path."""
    index = tm.task_index
    own = _harness_dir()
    files: dict[Path, None] = {}
    seen: set[str] = set()

    def visit(name) -> None:
        if not isinstance(name, str) or name in seen:
            return
        seen.add(name)
        entry = index.get(name)
        if entry is None:  # a YAML path (the harness looks names up first)
            path = Path(name)
            if path.suffix in (".yaml", ".yml") and path.is_file():
                files[path] = None
                members = _members(_ConfigScan.of(path).cfg)
            else:
                return
        else:
            if entry.yaml_path is not None:
                path = Path(entry.yaml_path)
                if own not in path.resolve().parents:
                    files[path] = None
            if getattr(entry.kind, "name", "") == "TAG":
                members = list(entry.tags)
            else:
                members = _members(entry.cfg)
        for member in members:
            visit(member)

    for name in names:
        visit(name)
    return list(files)


def _members(cfg) -> list[str]:
    """The task, group or tag names a group config lists (inline entries by their name)."""
    if not isinstance(cfg, dict) or "group" not in cfg or not isinstance(cfg.get("task"), list):
        return []
    out = []
    for item in cfg["task"]:
        if isinstance(item, dict):
            item = item.get("group", item.get("task"))
        if isinstance(item, str):
            out.append(item)
    return out


def _scan_loader(tags: list):
    """A safe YAML loader that records every tagged node (``!function x.y``, at its line)
    in ``tags`` instead of resolving it, and builds it as plain data."""
    import yaml

    base = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader

    # the base is chosen at run time (the C loader when libyaml is there): no static class
    class Loader(base):  # pyright: ignore[reportGeneralTypeIssues]
        pass

    def tagged(loader, _suffix, node):
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        tags.append((node.tag, node.start_mark.line + 1, value))
        return value if isinstance(value, str) else str(value)

    for prefix in ("!", "tag:yaml.org,2002:python/"):
        Loader.add_multi_constructor(prefix, tagged)
    return Loader


_FUNCTION_TEXT = re.compile(rb"!function\b|!<!function>|%TAG")


@dataclass
class _ConfigScan:
    """One task YAML read as the harness reads it (``include`` files first, then its own
    keys), without running anything: ``files`` it reads, ``functions`` (``(file, line,
    spec)`` of each ``!function``), ``cfg`` merged, ``data`` its local data files."""

    path: Path
    files: list[Path] = field(default_factory=list)
    functions: list[tuple[Path, int, str]] = field(default_factory=list)
    cfg: dict = field(default_factory=dict)

    @classmethod
    def of(cls, path: Path) -> _ConfigScan:
        scan = cls(Path(path))
        scan.cfg = scan._read(Path(path), set())
        return scan

    def _read(self, path: Path, seen: set[Path]) -> dict:
        import yaml

        real = path.expanduser().resolve()
        if real in seen or not real.is_file():  # cycles and missing files: the harness says
            return {}
        seen.add(real)
        own = _harness_dir() in real.parents
        if not own:
            self.files.append(path)
        try:
            raw = real.read_bytes()
        except OSError:
            return {}
        tags: list = []
        try:
            cfg = yaml.load(raw, Loader=_scan_loader(tags))  # noqa: S506 (a safe loader)
        except Exception:  # the harness cannot parse it either; refuse any sign of code
            if not own and _FUNCTION_TEXT.search(raw):
                self.functions.append((path, 0, "?"))
            return {}
        if not own:
            self.functions += [
                (path, line, str(value)) for tag, line, value in tags if tag == "!function"
            ]
        if not isinstance(cfg, dict):
            return {}
        includes = cfg.pop("include", None)
        merged: dict = {}
        for inc in includes if isinstance(includes, list) else [includes]:
            if isinstance(inc, str) and inc:
                merged.update(self._read(Path(os.path.normpath(real.parent / inc)), seen))
        merged.update(cfg)
        return merged

    @property
    def data(self) -> list[Path]:
        """Local files and folders the config's dataset reads: ``dataset_kwargs``
        ``data_files`` (globs expanded) and ``data_dir``, a local ``dataset_path``; relative
        ones against the working directory and against the config's folder (see
        :func:`_data_folder`)."""
        cfg = self.cfg
        given_kwargs = cfg.get("dataset_kwargs")
        kwargs = given_kwargs if isinstance(given_kwargs, dict) else {}
        files = kwargs.get("data_files")
        values = files.values() if isinstance(files, dict) else [files]
        given = [v for f in values for v in (f if isinstance(f, list) else [f])]
        given.append(kwargs.get("data_dir"))
        dataset = cfg.get("dataset_path")
        if isinstance(dataset, str) and not _is_builder(dataset):
            given.append(dataset)
        found: list[Path] = []
        for item in given:
            if not isinstance(item, str) or not item.strip() or "://" in item:
                continue
            for base in (Path.cwd(), self.path.resolve().parent):
                pattern = base / Path(item).expanduser()
                if any(c in item for c in "*?["):
                    import glob

                    found += [Path(m) for m in glob.glob(str(pattern), recursive=True)]
                elif os.path.lexists(pattern):
                    found.append(pattern)
        return found

    def refuse_code(self) -> None:
        """One-line :class:`InputError` for a ``!function`` (the harness imports and runs that
        Python file) or a metric the harness would fetch from HF ``evaluate`` (it runs the
        metric's Python script)."""
        if self.functions:
            file, line, spec = self.functions[0]
            where = f"{file}:{line}" if line else str(file)
            via = "" if Path(file) == self.path else f" (included by {self.path})"
            raise InputError(
                f"lm-eval task config {where}{via} has '!function {spec}', which imports and "
                f"runs Python code; {TRUST_HINT}"
            )
        fetched = _evaluate_metrics(self.cfg)
        if fetched:
            raise InputError(
                f"lm-eval task config {self.path} names metric {fetched[0]!r}, which is not one "
                "of the harness's metrics: it would be loaded from HF evaluate, which runs the "
                f"metric's Python script; use a metric of lm-eval or {TRUST_HINT}"
            )


def _evaluate_metrics(cfg: dict) -> list[str]:
    """The ``metric_list`` names the harness would load with HF ``evaluate`` (not in its
    registry, or ``hf_evaluate: true``); none when ``process_results`` scores the task."""
    metrics = cfg.get("metric_list")
    if not isinstance(metrics, list) or cfg.get("process_results") is not None:
        return []
    from lm_eval.api import metrics as _registered  # noqa: F401 (fills the registry)
    from lm_eval.api.registry import metric_registry

    out = []
    for item in metrics:
        name = item.get("metric") if isinstance(item, dict) else None
        if isinstance(name, str) and (name not in metric_registry or item.get("hf_evaluate")):
            out.append(name)
    return out


def _is_builder(name: str) -> bool:
    """A packaged ``datasets`` builder (``json``, ``csv``, ...), not a path."""
    try:
        from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES
    except ImportError:
        return name in ("json", "csv", "parquet", "text", "arrow")
    return name in _PACKAGED_DATASETS_MODULES


# ---------------------------------------------------------------- templates


@contextlib.contextmanager
def _sandbox(trusted: bool):
    """Render the harness's Jinja templates (``doc_to_text``, ...) in jinja2's sandbox while
    the block runs, unless ``trusted``: the harness's own environment lets a template reach
    Python (``{{ cycler.__init__.__globals__.os }}``)."""
    from lm_eval import utils

    if trusted or getattr(utils.env, "sandboxed", False):
        yield
        return
    from jinja2.sandbox import SandboxedEnvironment

    original = utils.env
    env = SandboxedEnvironment(
        loader=original.loader,
        undefined=original.undefined,
        keep_trailing_newline=original.keep_trailing_newline,
    )
    env.filters.update(original.filters)
    utils.env = env
    try:
        yield
    finally:
        utils.env = original


def _is_sandbox_error(e: BaseException) -> bool:
    from jinja2.exceptions import SecurityError

    return isinstance(e, SecurityError)


def _sandbox_refusal(name: str, e: BaseException) -> InputError:
    first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
    return InputError(
        f"lm-eval task {name!r} has a template that reaches into Python ({first}); templates "
        f"render in a sandbox: {TRUST_HINT}"
    )


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
        _check_docs(name, task, docs)  # before any model runs: data and metrics that fit
        _check_scoring(name, task, docs)
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


#: A template that is one field of the document: ``{{prompt}}``.
_WHOLE_FIELD = re.compile(r"^\s*\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\s*$")


def _check_docs(name: str, task, docs: list) -> None:
    """Refuse documents whose prompt or answer field is not text (LE06): a ``{{field}}``
    template renders ``None``, a list or a dict as its Python repr, which the harness would
    then prompt with and score. An answer may be a number (a choice index, a numeric
    answer)."""
    for key, allowed in (("doc_to_text", (str,)), ("doc_to_target", (str, int, float))):
        template = task.get_config(key)
        found = _WHOLE_FIELD.match(template) if isinstance(template, str) else None
        if found is None:
            continue
        field_name = found.group(1)
        for i, doc in enumerate(docs):
            value = doc.get(field_name) if isinstance(doc, dict) else None
            if isinstance(value, bool) or not isinstance(value, allowed):
                shown = repr(value)
                shown = shown if len(shown) <= 40 else shown[:37] + "..."
                what = "text" if key == "doc_to_text" else "text or a number"
                raise InputError(
                    f"lm-eval task {name!r}: document {i} has {field_name} = {shown}, not "
                    f"{what}, which {key} would render as its Python form; fix the data file"
                )


def _fake_results(task, doc) -> list:
    """What the model's requests return, in the shape ``process_results`` reads, for a dry
    run of the task's metrics before any model runs."""
    kind = task.get_config("output_type")
    if kind == "generate_until":
        return [str(task.doc_to_target(doc))]
    if kind == "multiple_choice":
        return [(0.0, False) for _ in task.doc_to_choice(doc)]
    if kind == "loglikelihood":
        return [(0.0, True)]
    return [0.0]  # loglikelihood_rolling


def _check_scoring(name: str, task: ConfigurableTask, docs: list) -> None:
    """A dry run of the task's ``metric_list`` on its first document (LE14): a metric that does
    not fit the task's output type (``acc`` on generated text) or that does not exist fails
    here in one line, not in the harness after the model has run."""
    if not docs:
        return
    try:
        # the harness's contract: values by metric name, and each metric's aggregation
        # reduces a list of them to a number
        values: dict[str, object] = task.process_results(docs[0], _fake_results(task, docs[0]))
        aggregations: dict[str, Callable[[list], SupportsFloat | str]] = task.aggregation()
        for metric, value in values.items():
            aggregate = aggregations.get(metric)
            if not callable(aggregate):
                raise TypeError(f"metric {metric!r} has no aggregation")
            float(aggregate([value, value]))
    except InputError:
        raise
    except Exception as e:
        if _is_sandbox_error(e):
            raise _sandbox_refusal(name, e) from None
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:120]
        metrics = [
            m.get("metric") for m in task.get_config("metric_list") or [] if isinstance(m, dict)
        ]
        raise InputError(
            f"lm-eval task {name!r} cannot score its {task.get_config('output_type')} outputs "
            f"with metric_list {metrics} ({type(e).__name__}: {first}); use metrics of that "
            "output type (generate_until: exact_match; multiple_choice: acc)"
        ) from None


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
    with _sandbox(suite.trusted):
        _check_readable(suite, tokenizer, unk)


def _check_readable(suite: LmEvalSuite, tokenizer, unk: int) -> None:
    for name, task in suite.task_dict["tasks"].items():
        docs = next((t.items for t in suite.tasks if t.name == name), [])
        n_tokens = n_unknown = 0
        for doc in docs:
            for fn in (task.doc_to_text, task.doc_to_target):
                try:
                    text = fn(doc)
                except Exception as e:
                    if _is_sandbox_error(e):
                        raise _sandbox_refusal(name, e) from None
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
    mode: AblationMode = "zero",
    mean_over: MeanOver = "all",
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
    with (
        _progress(progress, len(todo)) as advance,
        _quiet(),
        _sandbox(suite.trusted),
    ):
        for seed, label, hooked, missing in todo:
            advance.describe(f"lm-eval [{label}]")
            lm.set_heads(hooked, mode, mean_over)
            tasks = {n: suite.task_dict["tasks"][n] for n in missing}
            for task in tasks.values():
                task.set_fewshot_seed(seed=seed)
            try:
                out = evaluate(
                    lm=lm,
                    task_dict={"tasks": tasks, "groups": {}, "group_map": {}},
                    limit=suite.limit,
                    bootstrap_iters=0,
                    log_samples=True,
                )
            except Exception as e:
                if _is_sandbox_error(e):
                    raise _sandbox_refusal(",".join(tasks), e) from None
                raise
            if out is None:  # evaluate answers only on the main process; we run one
                raise RuntimeError("lm-eval's evaluate returned no results")
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


def _eval_result(out: EvalResults, task: LmEvalTask) -> EvalResult:
    """The harness's aggregate per metric (``scores``), its per-document values (``items``:
    NaN where a value is not a number, e.g. perplexity's ``(loglik, words)`` pairs) and, for
    generation tasks, the filtered answers."""
    agg = out.get("results", {})[task.name]
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
            setattr(module, "tqdm", _silent_tqdm(original))  # an attribute no stub declares
            patched.append((module, original))
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # "Generating test split" while loading local files
    # datasets logs "Failed to load JSON from file ..." before raising; the raise becomes
    # our one error line (LE11)
    data_logger = logging.getLogger("datasets")
    data_level = data_logger.level
    data_logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        if bars:
            datasets.enable_progress_bars()
        logger.setLevel(level)
        data_logger.setLevel(data_level)
        for module, original in patched:
            module.tqdm = original


def _silent_tqdm(original):
    def silent(*args, **kwargs):
        kwargs["disable"] = True
        return original(*args, **kwargs)

    return silent
