"""Lineage of grown, looped and layer-stacked models: duplication logs, per-head ancestry,
summaries, graphs, mergekit import and lineage inferred from weights.

Names load lazily (``import lineage`` stays light)::

    import lineage

    result = lineage.trace("grown8c", top=12, export=["graph.html"])  # induction lineage
    print(result.summary.sentence)
    df = lineage.head_ancestry(log, n_heads=4)                       # per-head ancestors
    log = lineage.mergekit_log("solar.yml", source_depth=32)         # mergekit -> log
"""

from __future__ import annotations

_LAZY = {
    "DuplicationLog": "lineage.log",
    "GrowthEvent": "lineage.log",
    "duplication_log": "lineage.log",
    "Lineage": "lineage.ancestry",
    "head_ancestry": "lineage.ancestry",
    "summarize": "lineage.summary",
    "LineageSummary": "lineage.summary",
    "lineage_graph": "lineage.graph",
    "export_graph": "lineage.export",
    "parse_config": "lineage.mergekit",
    "mergekit_log": "lineage.mergekit",
    "apply_mergekit": "lineage.mergekit",
    "grow_checkpoint": "lineage.checkpoint",
    "infer_lineage": "lineage.infer",
    "compare_with_log": "lineage.infer",
    "trace": "lineage.api",
    "TraceResult": "lineage.api",
    "TraceConfig": "lineage.api",
    "TracedModel": "lineage.api",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lineage' has no attribute {name!r}")
