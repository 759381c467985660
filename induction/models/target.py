"""What a scan needs from its model argument: the bridge, its facts, the loop plan, the device.

A scan accepts a :class:`induction.models.loading.LoadedModel` or a bare TransformerBridge; a bare
bridge gets its facts from :meth:`induction.models.loading.ModelInfo.from_bridge`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from induction.errors import InputError

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

    from induction.models.looped import LoopPlan
    from induction.models.model_types import ModelInfo


@dataclass(frozen=True)
class ScanTarget:
    """The bridge to run, its ModelInfo, and the loop plan of a looped model (else None)."""

    bridge: TransformerBridge
    info: ModelInfo
    loop_plan: LoopPlan | None = None

    @property
    def name(self) -> str:
        return self.info.name


def resolve_target(model: Any, caller: str = "induction_scores") -> ScanTarget:
    """A :class:`ScanTarget` from a LoadedModel, a bare TransformerBridge or a ScanTarget
    (duck-typed: anything with ``bridge`` and ``info``)."""
    if isinstance(model, ScanTarget):
        return model
    bridge = getattr(model, "bridge", None)
    if bridge is not None and getattr(model, "info", None) is not None:
        return ScanTarget(bridge, model.info, getattr(model, "loop_plan", None))
    if hasattr(model, "blocks") and hasattr(model, "cfg") and hasattr(model, "original_model"):
        from induction.models.loading import ModelInfo

        return ScanTarget(model, ModelInfo.from_bridge(model))
    raise InputError(
        f"{caller} needs a LoadedModel (induction.load_model) or a TransformerBridge, "
        f"got {type(model).__name__}"
    )


def check_layers(layers: Sequence[int] | None, n_layers: int) -> list[int]:
    """Sorted, de-duplicated layer indices (all layers for None), each in ``0..n_layers-1``."""
    if layers is None:
        return list(range(n_layers))
    out = sorted({int(x) for x in layers})
    bad = [x for x in out if not 0 <= x < n_layers]
    if bad or not out:
        raise InputError(f"layers must be in 0..{n_layers - 1}, got {list(layers)}")
    return out


def model_device(bridge) -> torch.device:
    """Where token ids go: the device of the input embedding."""
    try:
        return bridge.original_model.get_input_embeddings().weight.device
    except (AttributeError, NotImplementedError):
        return next(bridge.parameters()).device


def place(bridge, device: str | torch.device | None) -> torch.device:
    """The device to run on: the model's (None), or ``device`` after moving the model there."""
    if device is None:
        return model_device(bridge)
    from induction.models.loading import resolve_device

    dev = torch.device(resolve_device(device))
    if model_device(bridge) != dev:
        bridge.to(dev)
    return model_device(bridge)


def eos_token_id(bridge) -> int | None:
    tok = getattr(bridge, "tokenizer", None)
    return getattr(tok, "eos_token_id", None) if tok is not None else None


def module_device(module, default: torch.device) -> torch.device:
    try:
        return next(module.parameters()).device
    except StopIteration:
        return default
