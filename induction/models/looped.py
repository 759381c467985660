"""Looped models: a block of ``block`` layers run ``loops`` times, stored once, analysed unrolled.

TransformerLens hooks fire once per module call and a cache keeps only the last pass, so the
workbench never analyses a module that is reused: a looped checkpoint stores its block once
(with optional unique ``prelude`` and ``coda`` layers, "middle looping" of Saunshi et al. 2025)
plus ``loop_plan.json``, and :func:`unroll_checkpoint` builds an ordinary model whose layers are
separate copies, each knowing its block layer and pass (:attr:`LoopPlan.unrolled_layers`).

Training uses :func:`tie_layers`, where unrolled positions share one module (``use_cache=False``
is needed: the cache is indexed by layer).
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from torch import nn

from induction.errors import InputError, LineageError
from induction.models.layers import decoder_layers
from induction.store.io import guards_inputs

#: The model's own class, kept through the in-place and copying layer changes below.
ModuleT = TypeVar("ModuleT", bound=nn.Module)

PLAN_FILE = "loop_plan.json"
FORMAT = "induction-workbench/loop-plan"


@dataclass(frozen=True)
class LoopPlan:
    block: int
    loops: int
    prelude: int = 0
    coda: int = 0

    @property
    def stored_layers(self) -> int:
        return self.prelude + self.block + self.coda

    @property
    def unrolled_depth(self) -> int:
        return self.prelude + self.block * self.loops + self.coda

    @property
    def stored_index(self) -> list[int]:
        """For each unrolled layer, the index of the stored layer it runs."""
        p, k = self.prelude, self.block
        return (
            list(range(p))
            + [p + j for _ in range(self.loops) for j in range(k)]
            + [p + k + j for j in range(self.coda)]
        )

    @property
    def unrolled_layers(self) -> list[tuple[int, int]]:
        """For each unrolled layer, ``(stored layer, pass)``; prelude/coda layers have pass 0."""
        out = [(i, 0) for i in range(self.prelude)]
        out += [(self.prelude + j, r) for r in range(self.loops) for j in range(self.block)]
        out += [(self.prelude + self.block + j, 0) for j in range(self.coda)]
        return out

    def validate(self) -> None:
        for name in ("block", "loops"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise LineageError(f"loop plan: {name} must be a positive integer")
        for name in ("prelude", "coda"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise LineageError(f"loop plan: {name} must be a non-negative integer")

    @guards_inputs
    def save(self, folder: str | Path) -> None:
        """Write ``folder/loop_plan.json``; a plan read by :meth:`load` is not written back
        over the file it was read from (its ``inputs``)."""
        from induction.store.io import write_text

        write_text(
            Path(folder) / PLAN_FILE,
            json.dumps({"format": FORMAT, "version": 1, **asdict(self)}, indent=1) + "\n",
        )

    @classmethod
    def load(cls, folder: str | Path) -> LoopPlan:
        path = Path(folder) / PLAN_FILE if Path(folder).is_dir() else Path(folder)
        from induction.store.io import read_json

        try:
            data = read_json(path, "loop plan")
        except InputError as exc:
            raise LineageError(str(exc)) from None
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise LineageError(f"{path}: not a loop plan (format {_format(data)!r})")
            plan = cls(**{k: data[k] for k in ("block", "loops", "prelude", "coda")})
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise LineageError(f"cannot read loop plan {path}: {exc}") from None
        plan.validate()
        object.__setattr__(plan, "inputs", (path.absolute(),))  # not a field: not saved
        return plan


def _format(data) -> object:
    return data.get("format") if isinstance(data, dict) else type(data).__name__


def _layers(model: nn.Module) -> nn.ModuleList:
    return decoder_layers(model)


def _set_depth(model: nn.Module, modules: list[nn.Module]) -> None:
    layers = _layers(model)
    layers._modules.clear()
    for i, m in enumerate(modules):
        layers.add_module(str(i), m)
    config: Any = model.config  # a transformers PretrainedConfig (nn.Module types it as a tensor)
    config.num_hidden_layers = len(modules)
    if isinstance(getattr(config, "layer_types", None), list):
        config.layer_types = [config.layer_types[0]] * len(modules)


def tie_layers(model: ModuleT, plan: LoopPlan) -> ModuleT:
    """Turn a model holding the stored layers into the looped model (shared modules), in place."""
    stored = list(_layers(model))
    if len(stored) != plan.stored_layers:
        raise LineageError(
            f"model has {len(stored)} layers, the loop plan stores {plan.stored_layers}"
        )
    _set_depth(model, [stored[i] for i in plan.stored_index])
    return model


def untie_to_stored(model: ModuleT, plan: LoopPlan) -> ModuleT:
    """A deep copy of a tied looped model holding each stored layer once (for saving)."""
    out = copy.deepcopy(model)  # deepcopy keeps the sharing, so first occurrences suffice
    layers_out = list(_layers(out))
    _set_depth(out, [layers_out[plan.stored_index.index(i)] for i in range(plan.stored_layers)])
    return out


def unroll(model: nn.Module, plan: LoopPlan) -> nn.Module:
    """Replace the stored layers by separate deep copies in unrolled order, in place."""
    stored = list(_layers(model))
    if len(stored) != plan.stored_layers:
        raise LineageError(
            f"model has {len(stored)} layers, the loop plan stores {plan.stored_layers}"
        )
    _set_depth(model, [copy.deepcopy(stored[i]) for i in plan.stored_index])
    for i, layer in enumerate(_layers(model)):
        for module in layer.modules():
            if hasattr(module, "layer_idx"):
                module.layer_idx = i  # pyright: ignore[reportArgumentType]  (an int attribute, not a submodule)
            if hasattr(module, "config") and isinstance(module.config, type(model.config)):
                module.config = model.config
    return model


def unroll_checkpoint(folder: str | Path, dtype=None, attn_implementation: str | None = None):
    """Load a looped checkpoint folder (stored block + ``loop_plan.json``) as an unrolled model.

    Weights are read from safetensors only: a ``pytorch_model.bin`` beside them is never
    unpickled (docs/safety.md)."""
    from transformers import AutoModelForCausalLM

    plan = LoopPlan.load(folder)
    kwargs: dict = {"use_safetensors": True}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    model = AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
    return unroll(model, plan)
