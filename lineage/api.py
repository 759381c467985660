"""One call behind ``induction lineage``: :func:`trace` resolves a model's lineage (its
duplication log, loop plan, or weights), scores its heads (or reads a score table), and
returns the per-head ancestry, the top-n summary and the ancestry graph, optionally writing
the table and graph files.

The steps, each a small function: :func:`traced_model` (the resolved spec and its folder's
config facts, loading nothing a folder can tell), :func:`resolve_lineage` (log, loop plan or
inferred), :func:`get_scores` and :func:`ancestor_scores` (a table or a scan now), ancestry,
summary, graph, and :func:`write_outputs`. Rendering lives in :mod:`lineage.render`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from induction.config_fields import (
    DEVICE_HELP,
    DTYPE_HELP,
    option,
    prompt_batch_option,
)
from induction.errors import InputError, LineageError
from induction.scores.score_names import (
    FV_SCORE,
    INDUCTION_THRESHOLD,
    default_threshold,
    head_score_provider,
)
from induction.store.io import guards_inputs
from lineage.log import DuplicationLog, duplication_log, folder_log

if TYPE_CHECKING:
    from induction.models.checkpoint import ConfigFacts
    from induction.models.loading import LoadedModel
    from induction.models.looped import LoopPlan
    from induction.models.specs import ModelLike, ModelSpec


# --------------------------------------------------------------------------- the model


@dataclass
class TracedModel:
    """The model a trace is about: its resolved spec, the config facts of its folder (read
    without loading it), its duplication log, and the loaded model once a scan needs it."""

    spec: ModelSpec
    config: ConfigFacts | None  # zoo and folder specs; None for models loaded up front
    log: DuplicationLog | None
    loaded: LoadedModel | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def folder(self) -> Path | None:
        return self.spec.folder

    @property
    def n_layers(self) -> int:
        """Layers the model runs (unrolled for looped models)."""
        return self.config.n_layers if self.config is not None else self._loaded().info.n_layers

    @property
    def n_heads(self) -> int:
        if self.config is not None and self.config.n_heads is not None:
            return self.config.n_heads
        return self._loaded().info.n_heads

    @property
    def loop_plan(self) -> LoopPlan | None:
        return self.config.loop_plan if self.config is not None else self._loaded().loop_plan

    def _loaded(self) -> LoadedModel:
        """The loaded model of a trace without config facts (:func:`traced_model` loads it)."""
        assert self.loaded is not None  # no config facts: traced_model loaded the model
        return self.loaded

    @property
    def stored_layers(self) -> int:
        """Layers stored on disk (a looped model's block is stored once)."""
        plan = self.loop_plan
        return plan.stored_layers if plan is not None else self.n_layers

    def load(self, device="auto", dtype=None, trust_remote_code=False) -> LoadedModel:
        """The loaded model, loading the resolved spec on first use."""
        if self.loaded is None:
            from induction.models.loading import load_model

            self.loaded = load_model(
                self.spec, device=device, dtype=dtype, trust_remote_code=trust_remote_code
            )
        return self.loaded


def traced_model(model: Any, device="auto", dtype=None, trust_remote_code=False) -> TracedModel:
    """Resolve ``model`` (a spec or a LoadedModel; :func:`induction.models.specs.resolve_spec`).

    Zoo models and checkpoint folders are read from their files (config, log, loop plan)
    without loading; anything else is loaded now.
    """
    from induction.models.specs import is_loaded_model, resolve_spec

    spec = resolve_spec(model)
    folder = spec.folder if spec.kind in ("zoo", "folder") else None  # their path
    if folder is not None:
        from induction.models.checkpoint import read_config_facts

        config = read_config_facts(folder)
        if config.n_heads is None:
            raise InputError(f"{folder / 'config.json'} gives no attention head count")
        return TracedModel(spec, config, folder_log(folder, config.depth))
    traced = TracedModel(spec, None, None, spec.obj if is_loaded_model(spec.obj) else None)
    loaded = traced.load(device, dtype, trust_remote_code)
    traced.log = duplication_log(loaded)
    return traced


# --------------------------------------------------------------------------- options


def parse_trace_seeds(text: str) -> int | list[int]:
    """``--seeds``: a count ``"3"`` or a list ``"0,1,2"``, checked as the scan checks them."""
    from induction.scores.prompts import normalize_seeds

    try:
        if "," in text:
            value: int | list[int] = [int(s) for s in text.split(",") if s.strip()]
        else:
            value = int(text)
    except ValueError:
        raise InputError(
            f"--seeds must be a count or a comma-separated list, got {text!r}"
        ) from None
    if isinstance(value, int) and value < 1:
        raise InputError(f"--seeds must be at least 1, got {value}")
    normalize_seeds(value)  # the scan's own checks (range, duplicates), before any work
    return value


@dataclass(frozen=True)
class TraceConfig:
    """Options of :func:`trace` (and ``induction lineage``).

    ``scores`` / ``initial_scores`` are tables (DataFrame or file) with ``layer``, ``head`` and
    ``score`` columns; without ``scores`` the model is scanned now
    (:func:`induction.scores.scan.induction_scores`), and ``initial`` (a model spec) is scanned for
    the ancestor stage's scores. ``infer`` takes the lineage from weight similarity
    (:mod:`lineage.infer`) and, when the model has a log, reports the agreement. ``out`` writes
    the per-head ancestry table with scores; ``export`` writes the graph (suffix picks the
    format, :mod:`lineage.export`). ``progress`` reports the loading, the weight comparison
    and the scans (:mod:`induction.progress`; ``induction lineage`` turns it on).
    """

    log: str | Path | DuplicationLog | None = option(
        None,
        "duplication_log.json (or a folder holding one); default: the model's.",
        cli_type=Path | None,
    )
    scores: Any = option(
        None,
        "Score table of the model (layer, head, induction; from `induction scan --out`). "
        "Default: scan now.",
        cli_type=Path | None,
    )
    top: int = option(12, "Number of strongest heads to trace.")
    initial_scores: Any = option(
        None,
        "Score table of the initial (or --stage) network: marks ancestors that were already "
        "induction heads.",
        cli_type=Path | None,
    )
    initial: Any = option(
        None,
        "Model spec of the initial (or --stage) network to scan instead of --initial-scores.",
        cli_type=str | None,
    )
    stage: int = option(0, "Trace ancestors to this growth stage (0: the initial network).")
    infer: bool = option(
        False,
        "Infer the lineage from weight similarity (for models whose log was lost); with a log, "
        "also report how well the two agree.",
        "--infer",
    )
    score: str = option(
        "induction",
        "Score column that ranks heads: a scan score, or fv (function-vector scores, computed "
        "now on the model's pair tasks unless --scores has an fv column).",
    )
    # None: the score's convention (score_names.default_threshold)
    threshold: float | None = option(
        None,
        f"Score at which a head counts as one of its kind (default {INDUCTION_THRESHOLD} for "
        "scan scores; FV scores have no conventional one).",
    )
    cover: float = option(0.8, "Headline: fewest ancestors holding this share of the top heads.")
    seeds: int | list[int] = option(
        3,
        "Scan now: prompt seeds, a count n (seeds 0..n-1) or a list 0,1,2 (as `induction scan "
        "--seeds`; `ablate --seed`/`--prompt-seeds` seed its prompts).",
        parse=parse_trace_seeds,
    )
    batch: int = prompt_batch_option(32)
    device: str = option("auto", DEVICE_HELP)
    dtype: str | None = option(None, DTYPE_HELP)
    trust_remote_code: bool = option(
        False, "Allow a checkpoint's own Python code to run.", "--trust-remote-code"
    )
    out: str | Path | None = option(
        None,
        "Per-head ancestry table with scores (.csv, .parquet, .json, .jsonl).",
        "--out",
        "-o",
        cli_type=Path | None,
    )
    export: list[str | Path] | None = option(
        None,
        "Write the ancestry graph: .graphml, .gexf, .json (node-link), .dot or .html (repeatable).",
        cli_type=list[Path] | None,
        metavar="FILE",
    )
    progress: bool = False

    @property
    def export_paths(self) -> list[Path]:
        return [Path(p) for p in (self.export or [])]

    @property
    def input_paths(self) -> list[Path]:
        """The log and score tables given as files (what a trace reads besides the model)."""
        return [Path(v) for v in (self.log, self.scores, self.initial_scores) if _is_path(v)]

    @property
    def load_options(self) -> dict:
        return {
            "device": self.device,
            "dtype": self.dtype,
            "trust_remote_code": self.trust_remote_code,
        }

    def check(self) -> None:
        """Refuse bad output suffixes and conflicting options before any work."""
        from induction.store.io import TABLE_SUFFIXES
        from lineage.export import SUFFIXES

        for p in self.export_paths:
            if p.suffix.lower() not in SUFFIXES:
                raise InputError(
                    f"cannot export a graph to {p.name!r}: unknown suffix "
                    f"{p.suffix or '(none)'!r}; use one of {', '.join(SUFFIXES)}"
                )
        if self.out is not None and Path(self.out).suffix.lower() not in TABLE_SUFFIXES:
            raise InputError(
                f"cannot write a table to {Path(self.out).name!r}; use one of "
                f"{', '.join(TABLE_SUFFIXES)}"
            )
        if self.initial is not None and self.initial_scores is not None:
            raise InputError("pass either initial or initial_scores, not both")


# --------------------------------------------------------------------------- the result


@dataclass
class TraceResult:
    model: TracedModel
    lineage: Any  # lineage.ancestry.Lineage
    ancestry: Any  # DataFrame (head_ancestry)
    scores: Any  # DataFrame
    summary: Any  # LineageSummary
    graph: Any  # networkx.DiGraph
    inferred: Any = None  # InferredLineage with --infer
    agreement: dict | None = None  # inferred vs real log
    written: list[Path] = field(default_factory=list)
    scores_source: str = ""
    #: what the trace read (the model's folder, log and score tables, :func:`trace_inputs`):
    #: :meth:`save`/:meth:`plot` never write there
    inputs: tuple[Path, ...] = field(default=(), repr=False)

    @property
    def facts(self) -> TracedModel:
        """The traced model (its former name)."""
        return self.model

    @property
    def highlight(self) -> list[str]:
        """Graph node ids of the top heads."""
        from lineage.graph import node_id

        final = self.lineage.final_stage
        return [node_id(final, r.layer, r.head) for r in self.summary.top.itertuples()]

    def to_frame(self):
        """The per-head ancestry table with each head's scores (what ``--out`` writes)."""
        sc, anc = self.scores, self.ancestry
        keep = [c for c in sc.columns if c not in anc.columns or c in ("layer", "head")]
        return anc.merge(sc[keep], on=["layer", "head"], how="left")

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_frame` atomically (suffix: .csv, .parquet, .json, .jsonl)."""
        from induction.store.io import write_table

        return write_table(self.to_frame(), path)

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """The ancestry figure (plotly, top heads highlighted); with ``path``, write the graph
        there instead (``.html``: this figure; other suffixes: :mod:`lineage.export`)."""
        from lineage.export import export_graph, figure

        title = self.summary.sentence
        if path is None:
            return figure(self.graph, title=title, highlight=self.highlight)
        return export_graph(self.graph, path, title=title, highlight=self.highlight)

    def to_dict(self) -> dict:
        d = {
            "model": self.model.name,
            "lineage_source": self.lineage.source if not self.inferred else "inferred",
            "depths": list(self.lineage.depths),
            "n_heads": self.lineage.n_heads,
            "scores_source": self.scores_source,
            **self.summary.to_dict(),
            "written": [str(p) for p in self.written],
        }
        if self.inferred is not None:
            d["inferred"] = {
                "families": self.inferred.families,
                "confidence": self.inferred.confidence,
                "threshold": self.inferred.threshold,
                "mode": self.inferred.mode,
            }
        if self.agreement is not None:
            d["agreement_with_log"] = {
                k: v for k, v in self.agreement.items() if k not in ("truth", "inferred")
            }
        return d

    def print(self, console=None) -> None:
        """Print the summary tables (:func:`lineage.render.print_trace`)."""
        from lineage.render import print_trace

        print_trace(self, console)


# --------------------------------------------------------------------------- steps


def trace_inputs(traced: TracedModel, cfg: TraceConfig) -> tuple[Path, ...]:
    """What a trace reads: the model's folder, and the log and score tables it was given."""
    from induction.models.specs import inputs_of

    return inputs_of(traced, *cfg.input_paths)


def refuse_overwrites(traced: TracedModel, cfg: TraceConfig) -> None:
    """No output may replace an input (the model folder, log or score tables)."""
    from induction.store.io import refuse_overwrite_input

    inputs = trace_inputs(traced, cfg)
    for p in [*cfg.export_paths, *([Path(cfg.out)] if cfg.out is not None else [])]:
        refuse_overwrite_input(p, *inputs)


def resolve_lineage(traced: TracedModel, cfg: TraceConfig):
    """``(Lineage, InferredLineage | None, agreement | None)``: from the log (the model's or
    ``cfg.log``) or loop plan, or inferred from weights with ``cfg.infer``."""
    from lineage.ancestry import Lineage

    real_log = _real_log(traced, cfg.log)
    if cfg.infer:
        return _inferred_lineage(traced, real_log, cfg)
    if real_log is None and traced.loop_plan is None:
        raise LineageError(
            f"{traced.name} has no duplication_log.json or loop_plan.json: pass --log LOG, "
            "or --infer to infer the lineage from weights"
        )
    lin = Lineage.build(
        real_log, loop_plan=traced.loop_plan, n_heads=traced.n_heads, n_layers=traced.n_layers
    )
    return lin, None, None


def _real_log(traced: TracedModel, log) -> DuplicationLog | None:
    if log is None:
        return traced.log
    real = log if isinstance(log, DuplicationLog) else DuplicationLog.load(log)
    real.check_depth(traced.stored_layers)
    return real


def _inferred_lineage(traced: TracedModel, real_log: DuplicationLog | None, cfg: TraceConfig):
    from lineage.ancestry import Lineage
    from lineage.infer import compare_with_log, infer_lineage

    if traced.loop_plan is not None:
        raise LineageError("a looped model's lineage is its loop plan; --infer is for grown models")
    source = traced.folder
    if source is None:
        with _phase(cfg, f"loading {traced.name}"):
            source = traced.load(**cfg.load_options).hf_model
    with _phase(cfg, f"comparing the layers' weights of {traced.name}"):
        inferred = infer_lineage(source, n_heads=traced.n_heads)
    agreement = compare_with_log(inferred, real_log) if real_log is not None else None
    lin = Lineage.build(inferred.to_log(), n_heads=traced.n_heads, n_layers=traced.n_layers)
    return lin, inferred, agreement


def ancestor_stage(lin, stage: int) -> int:
    """``stage`` checked against the lineage: an existing stage before the final model."""
    stage = lin.check_stage(stage, "--stage")
    if stage == lin.final_stage and lin.final_stage > 0:
        raise InputError(f"--stage {stage} is the final model; ancestors need an earlier stage")
    return stage


def get_scores(traced: TracedModel, cfg: TraceConfig):
    """``(score table, where it came from)``: ``cfg.scores``, else a scan of the model now."""
    sc = _read_scores(cfg.scores, "score table")
    if sc is not None:
        return sc, str(cfg.scores) if _is_path(cfg.scores) else "given table"
    with _phase(cfg, f"loading {traced.name}"):
        loaded = traced.load(**cfg.load_options)
    sc = _scan(loaded, cfg)
    with _phase(cfg, f"output norms of {traced.name}"):
        sc = _with_output_norm(sc, loaded)
    if cfg.score == FV_SCORE:
        fv = sc.attrs.get("fv", {})
        return sc, (
            f"FV scores computed now ({fv.get('suite')} suite, {fv.get('n_tasks')} tasks x "
            f"{fv.get('n_prompts')} prompts x {fv.get('seeds')} seeds)"
        )
    return sc, f"scanned now (seeds {sc.attrs.get('seeds')}, batch {cfg.batch})"


def _with_output_norm(sc, loaded):
    """The scan plus each head's output norm (:mod:`induction.scores.output_norm`, a few prompts of
    the scan's first seed), so the summary can flag top heads that write nothing."""
    from induction.scores.output_norm import add_output_norm

    seeds = sc.attrs.get("seeds") or [0]
    return add_output_norm(
        sc, loaded, batch=min(4, int(sc.attrs.get("batch") or 4)), seeds=seeds[:1]
    )


def silent_hint(log: DuplicationLog | None) -> str | None:
    """The silent-heads note's closing words: certain when the log has LLaMA-Pro growth."""
    if log is not None and any(e.operator == "llama-pro" for e in log.events):
        return "zero-output copies from llama-pro growth (duplication log)"
    return None


def ancestor_scores(traced: TracedModel, lin, stage: int, cfg: TraceConfig):
    """Scores of the ancestor stage's network, or None: ``cfg.initial_scores``, else a scan of
    ``cfg.initial``, else of the pre-growth network a grown zoo model ships."""
    init_sc = _read_scores(cfg.initial_scores, "initial score table")
    initial = cfg.initial
    if initial is None and init_sc is None:
        initial = shipped_stage(traced.folder, stage)
    if initial is None:
        return init_sc
    from induction.models.loading import load_model

    with _phase(cfg, f"loading {initial}"):
        init_loaded = load_model(initial, **cfg.load_options)
    if init_loaded.info.n_layers != lin.depths[stage]:
        raise LineageError(
            f"--initial model has {init_loaded.info.n_layers} layers but stage {stage} of the "
            f"lineage has {lin.depths[stage]}"
        )
    return _scan(init_loaded, cfg)


def shipped_stage(folder: Path | None, stage: int) -> str | None:
    """The network just before the (stage+1)-th growth, when the model folder ships it: the
    first zoo's ``initial/`` (stage 0) and ``stage<k>/``, or a fixed-protocol run's
    ``checkpoints/step-<N>-pre/`` (the k-th of them in step order; docs/zoo.md)."""
    if folder is None:
        return None
    shipped = Path(folder) / ("initial" if stage == 0 else f"stage{stage}")
    if (shipped / "config.json").is_file():
        return str(shipped)
    pre = sorted(
        (p for p in (Path(folder) / "checkpoints").glob("step-*-pre") if p.name[5:-4].isdigit()),
        key=lambda p: int(p.name[5:-4]),
    )
    if stage < len(pre) and (pre[stage] / "config.json").is_file():
        return str(pre[stage])
    return None


def write_outputs(result: TraceResult, cfg: TraceConfig) -> None:
    """Write the ancestry table (``cfg.out``) and graph files (``cfg.export``)."""
    if cfg.out is not None:
        result.written.append(result.save(cfg.out))
    for p in cfg.export_paths:
        result.written.append(result.plot(p))


def _is_path(value: object) -> TypeGuard[str | os.PathLike[str]]:
    return isinstance(value, str | os.PathLike)


def _read_scores(value: Any, what: str):
    import pandas as pd

    from induction.store.io import read_table

    if value is None or isinstance(value, pd.DataFrame):
        return value
    path = Path(value)
    if not path.is_file():
        raise InputError(f"{what} not found: {path}")
    try:
        return read_table(path)
    except InputError:
        raise
    except Exception as exc:  # a corrupt table
        raise InputError(f"cannot read {what} {path}: {' '.join(str(exc).split())}") from None


def _scan(loaded, cfg: TraceConfig):
    """The traced score of ``loaded``: a scan, or FV scores (``score="fv"``: the provider
    ``induction.circuits.fv`` registers, with ``fv_scores``' defaults)."""
    if cfg.score == FV_SCORE:  # registered by induction.circuits.fv, a floor above
        return head_score_provider(FV_SCORE)(loaded)
    from induction.scores.scan import induction_scores

    return induction_scores(
        loaded, scores=cfg.score, seeds=cfg.seeds, batch=cfg.batch, progress=cfg.progress
    )


def _phase(cfg: TraceConfig, label: str):
    """A progress phase (:func:`induction.progress.phase`) when ``cfg.progress`` is on."""
    from induction.progress import phase

    return phase(label, cfg.progress)


# --------------------------------------------------------------------------- trace


def trace(
    model: ModelLike, config: TraceConfig | Mapping[str, Any] | None = None, /, **overrides: Any
) -> TraceResult:
    """Trace the ``top`` heads of ``model`` back to their ancestors at ``stage``.

    The one job signature (:mod:`induction.jobs`): ``model`` is any spec or a loaded model
    (``induction lineage`` defaults to :data:`induction.models.registry.DEFAULT_MODEL`),
    ``config`` a :class:`TraceConfig` or a dict of its fields, and ``overrides`` its fields
    (``scores``, ``top``, ``initial_scores``, ``initial``, ``stage``, ``infer``, ``out``,
    ``export``, ...), replacing the config's values; an unknown one is refused in one line.
    """
    from induction.jobs import job_config
    from lineage.ancestry import head_ancestry
    from lineage.graph import lineage_graph
    from lineage.summary import summarize

    cfg = job_config(TraceConfig, config, overrides, "lineage")
    cfg.check()
    with _phase(cfg, f"loading {model}" if isinstance(model, str | os.PathLike) else "loading"):
        traced = traced_model(model, **cfg.load_options)
    refuse_overwrites(traced, cfg)
    lin, inferred, agreement = resolve_lineage(traced, cfg)
    stage = ancestor_stage(lin, cfg.stage)
    sc, scores_source = get_scores(traced, cfg)
    init_sc = ancestor_scores(traced, lin, stage, cfg)
    ancestry = head_ancestry(lin, to_stage=stage)
    summary = summarize(
        ancestry,
        sc,
        top=cfg.top,
        score=cfg.score,
        initial_scores=init_sc,
        threshold=cfg.threshold if cfg.threshold is not None else default_threshold(cfg.score),
        cover=cfg.cover,
        silent_hint=silent_hint(_real_log(traced, cfg.log) if not cfg.infer else traced.log),
    )
    graph = lineage_graph(
        lin,
        scores=sc,
        stage_scores={stage: init_sc} if init_sc is not None else None,
        score=cfg.score,
        name=traced.name,
    )
    result = TraceResult(
        traced,
        lin,
        ancestry,
        sc,
        summary,
        graph,
        inferred,
        agreement,
        scores_source=scores_source,
        inputs=trace_inputs(traced, cfg),
    )
    write_outputs(result, cfg)
    return result


__all__ = ["TraceConfig", "TraceResult", "TracedModel", "trace", "traced_model"]
