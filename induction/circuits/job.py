"""The circuits job: from a model to its induction circuits and, for a grown model, their
lineage.

The finder (:func:`induction.circuits.finder.find_circuits`) measures the partners of every
induction head; the history (:func:`induction.circuits.history.circuit_lineage`) then traces
each circuit to the initial network. :func:`run` composes the two, so neither imports the
other's caller (docs/design.md). ``induction_circuits`` is its established name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from induction.circuits.finder import CircuitResult, CircuitsConfig, find_circuits
from induction.circuits.history import circuit_lineage
from induction.jobs import as_loaded, job_config
from induction.models.model_types import LoadedModel

if TYPE_CHECKING:
    from induction.models.specs import ModelLike


def run(
    model: ModelLike, config: CircuitsConfig | Mapping[str, Any] | None = None, /, **overrides
) -> CircuitResult:
    """Find each induction head's partners among earlier heads, by weights and activations,
    and (``lineage``, grown models) trace each circuit to its ancestors.

    ``model``: any spec or a LoadedModel; ``config``/``overrides``: :class:`CircuitsConfig`
    fields. Returns a :class:`~induction.circuits.finder.CircuitResult`.
    """
    cfg = job_config(CircuitsConfig, config, overrides, "circuits")
    loaded = as_loaded(model)
    result = find_circuits(loaded, cfg)
    # a grown model's log comes with a LoadedModel only (no induction head: nothing to trace)
    has_log = isinstance(loaded, LoadedModel) and loaded.duplication_log_path is not None
    if cfg.lineage and result.heads and has_log and isinstance(loaded, LoadedModel):
        same = replace(cfg, seq_len=result.settings["seq_len"])  # the initial network's prompts
        result.lineage = circuit_lineage(result, loaded, config=same)
    return result


induction_circuits = run
