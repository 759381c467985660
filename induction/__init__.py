"""Induction-head workbench: find, trace and ablate induction heads in transformer LMs.

Heavy modules (torch, transformers, TransformerLens) load on first use of ``load_model``,
``LoadedModel`` or ``ModelInfo``, so ``import induction`` and the CLI's help stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from induction.errors import InputError, LineageError, ModelLoadError, WorkbenchError
from induction.zoo.registry import zoo_models

if TYPE_CHECKING:
    from induction.loading import LoadedModel, ModelInfo, load_model
    from induction.scores import induction_scores

__version__ = "0.1.0"

_LAZY = {
    "load_model": "induction.loading",
    "LoadedModel": "induction.loading",
    "ModelInfo": "induction.loading",
    "induction_scores": "induction.scores",
}

__all__ = [
    "InputError",
    "LineageError",
    "LoadedModel",
    "ModelInfo",
    "ModelLoadError",
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
