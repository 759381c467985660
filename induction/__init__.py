"""Induction-head workbench: find, trace and ablate induction heads in transformer LMs.

Heavy modules (torch, transformers, TransformerLens) load on first use of ``load_model``,
``LoadedModel``, ``ModelInfo``, ``induction_scores``, ``ScanConfig`` or ``ScanResult``, so
``import induction`` and the CLI's help stay fast. The scan pipeline itself is
``from induction.scores.scan import scan`` (``induction.scores.scan`` is the module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from induction.errors import InputError, LineageError, ModelLoadError, WorkbenchError
from induction.heads import INDUCTION_THRESHOLD
from induction.models.registry import zoo_models

if TYPE_CHECKING:
    from induction.models.loading import LoadedModel, ModelInfo, load_model
    from induction.scores.scan import ScanConfig, ScanResult, induction_scores

__version__ = "0.1.0"

_LAZY = {
    "load_model": "induction.models.loading",
    "LoadedModel": "induction.models.loading",
    "ModelInfo": "induction.models.loading",
    "induction_scores": "induction.scores.scan",
    "ScanConfig": "induction.scores.scan",
    "ScanResult": "induction.scores.scan",
}

__all__ = [
    "INDUCTION_THRESHOLD",
    "InputError",
    "LineageError",
    "LoadedModel",
    "ModelInfo",
    "ModelLoadError",
    "ScanConfig",
    "ScanResult",
    "WorkbenchError",
    "induction_scores",
    "load_model",
    "zoo_models",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'induction' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
