"""The whole replication: measure every model (:mod:`.measure`), then the cross-model
statistics (:mod:`.stats`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from .config import Settings
from .measure import measure
from .models import ModelRef, discover
from .stats import add_model_stats, comparisons, family_summary


@dataclass
class Replication:
    models: pd.DataFrame  # one row per model (every seed)
    tasks: pd.DataFrame  # one row per model x task (zoo19 and RegBench reports)
    families: pd.DataFrame  # one row per family
    settings: Settings
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)  # families vs dense
    sentences: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def from_models(cls, models: pd.DataFrame, settings: Settings, **kw) -> Replication:
        """Everything derived from the per-model rows (what ``--from-results`` recomputes)."""
        models = add_model_stats(models)
        return cls(
            models=models,
            families=family_summary(models),
            comparisons=comparisons(models),
            settings=settings,
            **{"tasks": pd.DataFrame(), **kw},
        )

    def markdown(self) -> str:
        from .report import markdown_tables

        return markdown_tables(self)


def replicate(
    refs: Sequence[ModelRef] | None = None,
    settings: Settings | None = None,
    progress: bool = False,
    log=print,
) -> Replication:
    """Measure every model of ``refs`` (default: the shipped zoo's dense, grown and looped
    models) and summarise."""
    settings = settings or Settings()
    refs = discover() if refs is None else list(refs)
    if not refs:
        from induction.errors import InputError

        raise InputError("no zoo models found; train them with `induction zoo train`")
    start = time.perf_counter()
    rows, task_tables, sentences = [], [], {}
    for ref in refs:
        m = measure(ref, settings, progress=progress)
        rows.append(m.row)
        task_tables.append(m.tasks)
        sentences[ref.name] = m.sentence
        if log:
            r = m.row
            log(
                f"{ref.name}: drop {r['drop']:+.3f} [{r['ci_lo']:+.3f}, {r['ci_hi']:+.3f}] "
                f"(random {r['ctrl_mean']:+.3f} ± {r['ctrl_std']:.3f}, p {r['p_perm']:.3f}); "
                f"{r['src_heads']} of top {r['src_top']} from {r['src_ancestors']} ancestors; "
                f"{m.seconds:.0f} s"
            )
    return Replication.from_models(
        pd.DataFrame(rows),
        settings,
        tasks=pd.concat(task_tables, ignore_index=True),
        sentences=sentences,
        seconds=time.perf_counter() - start,
    )
