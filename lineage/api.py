"""One call behind ``induction lineage``: :func:`trace` resolves a model's lineage (its
duplication log, loop plan, or weights), scores its heads (or reads a score table), and
returns the per-head ancestry, the top-n summary and the ancestry graph, optionally writing
the table and graph files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from induction.errors import InputError, LineageError
from induction.layers import config_depth, config_heads
from lineage.log import DuplicationLog, duplication_log


@dataclass
class ModelFacts:
    name: str
    folder: Path | None
    n_layers: int  # unrolled for looped models
    n_heads: int
    log: DuplicationLog | None
    loop_plan: Any
    loaded: Any = None  # LoadedModel once loaded


@dataclass
class TraceResult:
    facts: ModelFacts
    lineage: Any  # lineage.ancestry.Lineage
    ancestry: Any  # DataFrame (head_ancestry)
    scores: Any  # DataFrame
    summary: Any  # LineageSummary
    graph: Any  # networkx.DiGraph
    inferred: Any = None  # InferredLineage with --infer
    agreement: dict | None = None  # inferred vs real log
    written: list[Path] = field(default_factory=list)
    scores_source: str = ""

    def to_dict(self) -> dict:
        d = {
            "model": self.facts.name,
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
        from rich.console import Console
        from rich.table import Table

        console = console or Console()
        s = self.summary
        lin = self.lineage
        source = "inferred from weights" if self.inferred is not None else lin.source
        depths = " -> ".join(map(str, lin.depths))
        console.print(
            f"[bold]{self.facts.name}[/bold]: {lin.final_depth} layers x {lin.n_heads} heads; "
            f"lineage: {source} ({depths} layers); scores: {self.scores_source}"
        )
        console.print(f"[bold]{s.sentence}[/bold]")
        console.print(s.detail)
        t = Table(title=f"Top {s.n_top} heads by {s.score}", title_justify="left")
        for col in ("rank", "head", s.score, "ancestor", "path (layers by stage)"):
            t.add_column(col, justify="right" if col in ("rank", s.score) else "left")
        for r in s.top.itertuples(index=False):
            t.add_row(str(r.rank), r.label, f"{getattr(r, s.score):.3f}", r.ancestors, r.path)
        console.print(t)
        a = Table(
            title=f"Ancestors (stage {s.ancestor_stage}) of the top {s.n_top}",
            title_justify="left",
        )
        a.add_column("ancestor")
        a.add_column("top", justify="right")
        a.add_column("desc.", justify="right")
        a.add_column("mean", justify="right")
        has_init = "ancestor_score" in s.ancestors.columns
        if has_init:
            a.add_column("own (IH?)", justify="right")
        a.add_column(f"top descendants ({s.score})")
        for r in s.ancestors.itertuples(index=False):
            row = [r.ancestor, str(r.n_top), str(r.n_descendants), f"{r.score_mean:.3f}"]
            if has_init:
                own = r.ancestor_score
                flag = r.was_induction_head
                row.append("-" if own != own else f"{own:.3f} {'yes' if flag else 'no'}")
            row.append(r.descendants.replace("; ", ", "))
            a.add_row(*row)
        console.print(a)
        if self.inferred is not None:
            conf = self.inferred.confidence
            console.print(
                f"inferred: {self.inferred.n_families} ancestor layers, families "
                f"{self.inferred.families}, confidence min {min(conf):.2f} / mean "
                f"{sum(conf) / len(conf):.2f} (threshold {self.inferred.threshold:.3f})"
            )
        if self.agreement is not None:
            ag = self.agreement
            console.print(
                f"agreement with the duplication log: partition "
                f"{'equal' if ag['partition_equal'] else 'DIFFERENT'}, layers "
                f"{ag['layer_agreement']:.0%}, pairs {ag['pair_agreement']:.0%}"
            )
        err = Console(stderr=True)  # diagnostics to stderr, results to stdout
        for note in s.notes:
            err.print(f"note: {note}")
        for p in self.written:
            err.print(f"wrote {p}")


# --------------------------------------------------------------------------- model facts


def _read_json(path: Path) -> dict:
    from induction.io import read_json

    return read_json(path, "JSON file")


def _facts_from_folder(folder: Path, name: str) -> ModelFacts:
    from induction.looped import LoopPlan

    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise InputError(f"{folder} has no config.json; expected a Hugging Face checkpoint folder")
    cfg = _read_json(cfg_path)
    depth = (config_depth(cfg) or (None, None))[1]
    heads = config_heads(cfg)
    if depth is None or heads is None:
        raise InputError(f"{cfg_path} gives no layer or head count")
    plan = LoopPlan.load(folder) if (folder / "loop_plan.json").is_file() else None
    log = None
    if (folder / "duplication_log.json").is_file():
        log = DuplicationLog.load(folder / "duplication_log.json")
        log.check_depth(depth)  # the stored layers
    n_layers = plan.unrolled_depth if plan is not None else depth
    return ModelFacts(name, folder, n_layers, heads, log, plan)


def model_facts(model: Any, device="auto", dtype=None, trust_remote_code=False) -> ModelFacts:
    """Facts about ``model`` (spec or LoadedModel), loading it only when it is not a folder."""
    if hasattr(model, "info") and hasattr(model, "bridge"):
        info = model.info
        folder = Path(info.path) if info.path and Path(info.path).is_dir() else None
        return ModelFacts(
            info.name,
            folder,
            info.n_layers,
            info.n_heads,
            duplication_log(model),
            model.loop_plan,
            model,
        )
    if isinstance(model, str | os.PathLike):
        text = os.fspath(model)
        from induction.zoo import registry

        if isinstance(model, str) and registry.is_zoo_name(text) and not text.startswith("."):
            folder = registry.zoo_path(text)
            return _facts_from_folder(folder, folder.name)
        path = Path(text).expanduser()
        if path.is_dir():
            return _facts_from_folder(path, path.resolve().name)
    from induction.loading import load_model

    loaded = load_model(model, device=device, dtype=dtype, trust_remote_code=trust_remote_code)
    return model_facts(loaded)


def _ensure_loaded(facts: ModelFacts, spec: Any, device, dtype, trust_remote_code):
    if facts.loaded is None:
        from induction.loading import load_model

        target = facts.folder if facts.folder is not None else spec
        facts.loaded = load_model(
            str(target) if isinstance(target, Path) else target,
            device=device,
            dtype=dtype,
            trust_remote_code=trust_remote_code,
        )
    return facts.loaded


def _read_scores(value: Any, what: str):
    import pandas as pd

    from induction.io import read_table

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


def _scan(loaded, score: str, seeds, batch: int):
    from induction.scores import induction_scores

    return induction_scores(loaded, scores=score, seeds=seeds, batch=batch, progress=False)


# --------------------------------------------------------------------------- trace


def trace(
    model: Any = "grown",
    *,
    log: str | Path | DuplicationLog | None = None,
    scores: Any = None,
    top: int = 12,
    initial_scores: Any = None,
    initial: Any = None,
    stage: int = 0,
    infer: bool = False,
    score: str = "induction",
    threshold: float = 0.4,
    cover: float = 0.8,
    seeds: int | list[int] = 3,
    batch: int = 32,
    device: str = "auto",
    dtype: str | None = None,
    trust_remote_code: bool = False,
    out: str | Path | None = None,
    export: list[str | Path] | None = None,
) -> TraceResult:
    """Trace the ``top`` heads of ``model`` back to their ancestors at ``stage``.

    ``scores`` / ``initial_scores`` are tables (DataFrame or file) with ``layer``, ``head`` and
    ``score`` columns; without ``scores`` the model is scanned now
    (:func:`induction.scores.induction_scores`), and ``initial`` (a model spec) is scanned for
    the ancestor stage's scores. ``infer`` takes the lineage from weight similarity
    (:mod:`lineage.infer`) and, when the model has a log, reports the agreement. ``out`` writes
    the per-head ancestry table with scores; ``export`` writes the graph (suffix picks the
    format, :mod:`lineage.export`).
    """
    from induction.io import TABLE_SUFFIXES, refuse_overwrite_input, write_table
    from lineage.ancestry import Lineage, head_ancestry
    from lineage.export import SUFFIXES, export_graph
    from lineage.graph import lineage_graph, node_id
    from lineage.summary import summarize

    export = [Path(p) for p in (export or [])]
    for p in export:
        if p.suffix.lower() not in SUFFIXES:
            raise InputError(
                f"cannot export a graph to {p.name!r}: unknown suffix {p.suffix or '(none)'!r}; "
                f"use one of {', '.join(SUFFIXES)}"
            )
    if out is not None and Path(out).suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(
            f"cannot write a table to {Path(out).name!r}; use one of {', '.join(TABLE_SUFFIXES)}"
        )
    if initial is not None and initial_scores is not None:
        raise InputError("pass either initial or initial_scores, not both")

    facts = model_facts(model, device, dtype, trust_remote_code)
    inputs = [facts.folder]
    for v in (log, scores, initial_scores):
        if isinstance(v, str | os.PathLike):
            inputs.append(Path(v))
    for p in [*export, *([Path(out)] if out is not None else [])]:
        refuse_overwrite_input(p, *inputs)

    real_log = facts.log
    if log is not None:
        real_log = log if isinstance(log, DuplicationLog) else DuplicationLog.load(log)
        stored = facts.n_layers
        if facts.loop_plan is not None:
            stored = facts.loop_plan.stored_layers
        real_log.check_depth(stored)

    inferred = agreement = None
    if infer:
        if facts.loop_plan is not None:
            raise LineageError(
                "a looped model's lineage is its loop plan; --infer is for grown models"
            )
        from lineage.infer import compare_with_log, infer_lineage

        if facts.folder is not None:
            source = facts.folder
        else:
            source = _ensure_loaded(facts, model, device, dtype, trust_remote_code).hf_model
        inferred = infer_lineage(source, n_heads=facts.n_heads)
        if real_log is not None:
            agreement = compare_with_log(inferred, real_log)
        lin = Lineage.build(inferred.to_log(), n_heads=facts.n_heads, n_layers=facts.n_layers)
    else:
        if real_log is None and facts.loop_plan is None:
            raise LineageError(
                f"{facts.name} has no duplication_log.json or loop_plan.json: pass --log LOG, "
                "or --infer to infer the lineage from weights"
            )
        lin = Lineage.build(
            real_log, loop_plan=facts.loop_plan, n_heads=facts.n_heads, n_layers=facts.n_layers
        )
    stage = lin.check_stage(stage, "--stage")
    if stage == lin.final_stage and lin.final_stage > 0:
        raise InputError(f"--stage {stage} is the final model; ancestors need an earlier stage")

    sc = _read_scores(scores, "score table")
    scores_source = str(scores) if isinstance(scores, str | os.PathLike) else "given table"
    if sc is None:
        loaded = _ensure_loaded(facts, model, device, dtype, trust_remote_code)
        sc = _scan(loaded, score, seeds, batch)
        scores_source = f"scanned now (seeds {sc.attrs.get('seeds')}, batch {batch})"
    init_sc = _read_scores(initial_scores, "initial score table")
    if initial is None and init_sc is None and facts.folder is not None:
        # Grown zoo models ship their pre-growth networks: initial/ for stage 0, stage<k>/ for
        # the network just before the (k+1)-th growth (see zoo.train).
        shipped = Path(facts.folder) / ("initial" if stage == 0 else f"stage{stage}")
        if (shipped / "config.json").is_file():
            initial = str(shipped)
    if initial is not None:
        from induction.loading import load_model

        init_loaded = load_model(
            initial, device=device, dtype=dtype, trust_remote_code=trust_remote_code
        )
        if init_loaded.info.n_layers != lin.depths[stage]:
            raise LineageError(
                f"--initial model has {init_loaded.info.n_layers} layers but stage {stage} of the "
                f"lineage has {lin.depths[stage]}"
            )
        init_sc = _scan(init_loaded, score, seeds, batch)

    ancestry = head_ancestry(lin, to_stage=stage)
    summary = summarize(
        ancestry,
        sc,
        top=top,
        score=score,
        initial_scores=init_sc,
        threshold=threshold,
        cover=cover,
    )
    graph = lineage_graph(
        lin,
        scores=sc,
        stage_scores={stage: init_sc} if init_sc is not None else None,
        score=score,
        name=facts.name,
    )
    result = TraceResult(
        facts=facts,
        lineage=lin,
        ancestry=ancestry,
        scores=sc,
        summary=summary,
        graph=graph,
        inferred=inferred,
        agreement=agreement,
        scores_source=scores_source,
    )
    if out is not None:
        keep = [c for c in sc.columns if c not in ancestry.columns or c in ("layer", "head")]
        table = ancestry.merge(sc[keep], on=["layer", "head"], how="left")
        result.written.append(write_table(table, out))
    highlight = [node_id(lin.final_stage, r.layer, r.head) for r in summary.top.itertuples()]
    for p in export:
        result.written.append(export_graph(graph, p, title=summary.sentence, highlight=highlight))
    return result
