"""The replication of the source's induction-head claims (Kapl et al. 2025; docs/research.md)
on the zoo, split along its seams:

- :mod:`.config`: :class:`Settings` and the source's figures (:data:`SOURCE`);
- :mod:`.models`: which models (:func:`discover`; shipped zoo or ``--models-dir``);
- :mod:`.measure`: one model through ``induction.scores.scan.scan``, ``lineage.trace`` and
  ``ablation.ablate`` (the CLI's pipelines);
- :mod:`.stats`: across models and seeds, with :mod:`induction.stats` only;
- :mod:`.report`: tables and the verdict; :mod:`.figures`: the plotly figure;
- :mod:`.store`: each model's measurement kept on disk and reused while its inputs hold;
- :mod:`.gates`: the validity gates per model and the verdict per source claim;
- :mod:`.results`: outputs, ``--from-results`` and the ``docs/results.md`` block;
- :mod:`.cli`: ``induction replicate`` (and ``python benchmarks/replication.py``, a thin file
  that calls :func:`main`).
"""

from induction.stats import pooled_rank_p

from .cli import main
from .config import DEFAULT_OUT, GROUPS, SOURCE, SOURCE_FAMILIES, SOURCE_LABEL, Settings
from .figures import figure
from .gates import claims, claims_markdown, gate_markdown, gate_table
from .measure import Measured, ancestor_counts, measure, source_headline
from .models import FAMILIES, SOURCE_FAMILY, ModelRef, discover, source_family
from .pipeline import Replication, measure_model, replicate
from .report import markdown_tables, task_table, verdict
from .results import (
    README_END,
    README_START,
    SUMMARY_END,
    SUMMARY_START,
    load_results,
    readme_block,
    record_settings,
    summary_block,
    update_readme,
    update_summary,
    write_outputs,
)
from .stats import add_flops_ratio, add_model_stats, comparisons, family_summary
from .store import MeasurementStore, code_hash, measurement_key

__all__ = [
    "DEFAULT_OUT",
    "FAMILIES",
    "GROUPS",
    "README_END",
    "README_START",
    "SOURCE",
    "SOURCE_FAMILIES",
    "SOURCE_FAMILY",
    "SOURCE_LABEL",
    "SUMMARY_END",
    "SUMMARY_START",
    "MeasurementStore",
    "Measured",
    "ModelRef",
    "Replication",
    "Settings",
    "add_flops_ratio",
    "add_model_stats",
    "ancestor_counts",
    "code_hash",
    "comparisons",
    "discover",
    "family_summary",
    "figure",
    "load_results",
    "main",
    "markdown_tables",
    "measure",
    "measure_model",
    "measurement_key",
    "pooled_rank_p",
    "readme_block",
    "replicate",
    "source_family",
    "source_headline",
    "task_table",
    "summary_block",
    "update_readme",
    "update_summary",
    "verdict",
    "write_outputs",
    "claims",
    "claims_markdown",
    "gate_markdown",
    "gate_table",
    "record_settings",
]
