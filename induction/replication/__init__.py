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
- ``induction replicate`` (:mod:`induction.commands.replicate`, also ``python
  benchmarks/replication.py``) runs it from the command line, its settings' options built
  from :class:`SettingsOptions`.

Names load lazily (``induction replicate --help`` imports no torch).
"""

from __future__ import annotations

import importlib

_API = {
    "DEFAULT_OUT": "induction.replication.config",
    "FAMILIES": "induction.replication.models",
    "GROUPS": "induction.replication.config",
    "README_END": "induction.replication.results",
    "README_START": "induction.replication.results",
    "SOURCE": "induction.replication.config",
    "SOURCE_FAMILIES": "induction.replication.config",
    "SOURCE_FAMILY": "induction.replication.models",
    "SOURCE_LABEL": "induction.replication.config",
    "SUMMARY_END": "induction.replication.results",
    "SUMMARY_START": "induction.replication.results",
    "MeasurementStore": "induction.replication.store",
    "Measured": "induction.replication.measure",
    "ModelRef": "induction.replication.models",
    "Replication": "induction.replication.pipeline",
    "Settings": "induction.replication.config",
    "SettingsOptions": "induction.replication.config",
    "add_flops_ratio": "induction.replication.stats",
    "add_model_stats": "induction.replication.stats",
    "ancestor_counts": "induction.replication.measure",
    "code_hash": "induction.replication.store",
    "comparisons": "induction.replication.stats",
    "discover": "induction.replication.models",
    "family_summary": "induction.replication.stats",
    "figure": "induction.replication.figures",
    "load_results": "induction.replication.results",
    "markdown_tables": "induction.replication.report",
    "measure": "induction.replication.measure",
    "measure_model": "induction.replication.pipeline",
    "measurement_key": "induction.replication.store",
    "pooled_rank_p": "induction.stats",
    "readme_block": "induction.replication.results",
    "replicate": "induction.replication.pipeline",
    "source_family": "induction.replication.models",
    "source_headline": "induction.replication.measure",
    "task_table": "induction.replication.report",
    "summary_block": "induction.replication.results",
    "update_readme": "induction.replication.results",
    "update_summary": "induction.replication.results",
    "verdict": "induction.replication.report",
    "write_outputs": "induction.replication.results",
    "claims": "induction.replication.gates",
    "claims_markdown": "induction.replication.gates",
    "gate_markdown": "induction.replication.gates",
    "gate_table": "induction.replication.gates",
    "record_settings": "induction.replication.results",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'induction.replication' has no attribute {name!r}")
