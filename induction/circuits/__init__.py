"""Induction circuits and per-head causality, above ``ablation`` and ``lineage``.

A package of its own on floor 3 (docs/design.md): the causal code needs the ablation hooks
(``ablation.hooks``) and the circuit lineage needs head ancestry (``lineage``), and those two
floor-2 packages stay independent of each other; the weight-only math lives on the ground
floor (``induction.scores.composition``). Names load lazily::

    from induction.circuits import induction_circuits, head_effects

    result = induction_circuits("grown8c")     # partners of every induction head
    result.to_frame(); result.save("circuits.csv"); result.plot("circuits.html")
    effects = head_effects("grown8c", mode="mean", reference="random")
"""

from __future__ import annotations

import importlib

_API = {
    "induction_circuits": "induction.circuits.job",
    "CircuitsConfig": "induction.circuits.config",
    "EffectsConfig": "induction.circuits.config",
    "fv_scores": "induction.circuits.fv",
    "FVConfig": "induction.circuits.config",
    "FVResult": "induction.circuits.fv",
    "CircuitResult": "induction.circuits.finder",
    "circuit_lineage": "induction.circuits.history",
    "CircuitLineage": "induction.circuits.history",
    "head_effects": "induction.circuits.effects",
    "EffectsResult": "induction.circuits.effects",
    "attribution": "induction.circuits.effects",
    "ablate_each_head": "induction.circuits.effects",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'circuits' has no attribute {name!r}")
