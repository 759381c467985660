"""What every job shares: one signature and one result protocol.

A job is ``run(model, config=None, /, **overrides) -> Result``: ``model`` is any model spec or
a loaded model (:data:`induction.models.specs.ModelLike`), ``config`` its frozen config dataclass
or a dict of its fields, and ``overrides`` replace fields. The jobs:
:func:`induction.scores.scan.scan`
(``ScanConfig``), :func:`lineage.trace` (``TraceConfig``), :func:`ablation.ablate`
(``AblationConfig``), :func:`induction.circuits.job.run` (``CircuitsConfig``),
:func:`induction.circuits.effects.run` (``EffectsConfig``), :func:`induction.circuits.fv.run`
(``FVConfig``), and :func:`induction.dynamics.sweep.sweep` (``SweepSettings``, which holds a
``ScanConfig``; its models are ``sources`` and its dataset folder ``out``, both before
``config``). Their results meet :class:`Result`; docs/design.md follows one job through.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload, runtime_checkable

from induction.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import PreTrainedModel

    from induction.models.model_types import LoadedModel
    from induction.models.specs import ModelLike, ModelSpec

C = TypeVar("C")


@runtime_checkable
class Result(Protocol):
    """A job's typed result: a tidy table, a file, a figure."""

    def to_frame(self) -> pd.DataFrame:
        """The result as one tidy table."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the result (its format from the suffix), atomically; returns the path."""
        ...

    def plot(self, path: str | Path | None = None) -> Any:
        """The result's figure (plotly), also written to ``path`` when given."""
        ...


def job_config(
    cls: type[C], config: C | Mapping[str, Any] | None, overrides: Mapping[str, Any], job: str
) -> C:
    """``config`` (an instance of ``cls``, a dict of its fields or None) with ``overrides``
    applied; an unknown field or a config of another type is refused in one line."""
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    if config is None:
        base: dict[str, Any] = {}
    elif isinstance(config, Mapping):
        base = dict(config)
    elif isinstance(config, cls):
        base = {}
    else:
        raise InputError(
            f"{job} config must be a {cls.__name__} or a dict, got {type(config).__name__}"
        )
    settings = {**base, **overrides}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise InputError(
            f"unknown {job} setting {unknown[0]!r}; known: {', '.join(sorted(fields))}"
        )
    if isinstance(config, cls):
        return dataclasses.replace(config, **settings) if settings else config  # type: ignore[type-var]
    return cls(**settings)


@overload
def as_loaded(model: str | os.PathLike[str] | ModelSpec | LoadedModel) -> LoadedModel: ...
@overload
def as_loaded(model: TransformerBridge) -> TransformerBridge: ...
@overload
def as_loaded(model: PreTrainedModel) -> PreTrainedModel: ...
@overload
def as_loaded(model: ModelLike) -> LoadedModel | TransformerBridge | PreTrainedModel: ...
def as_loaded(model: ModelLike) -> LoadedModel | TransformerBridge | PreTrainedModel:
    """A loaded model from any spec (``lidas8``, a folder, a ``.gguf``, ``smollm2``, a hub
    name, a :class:`~induction.models.specs.ModelSpec`); a loaded model, a bridge or a transformers
    model passes through as it is (the return type says which)."""
    from induction.models.specs import ModelSpec

    if isinstance(model, str | os.PathLike | ModelSpec):
        from induction.models.loading import load_model

        return load_model(model)
    return model
