"""Depth-growth operators on Hugging Face decoders: duplicate a span of layers in place.

``duplicate_layers`` is the general operator (any contiguous half-open span, any insertion
index); ``midas_span`` and ``lidas_span`` are the presets of docs/research.md ("Depth growth"):

- MIDAS (Saunshi et al. 2024) copies the middle block of ``b`` layers, counted in blocks of
  ``b`` from the bottom, and inserts the copy right after it;
- LIDAS (Kapl et al. 2025) copies the ``b`` layers centred on the network's midpoint and inserts
  the copy at the midpoint, so ``abcd|efgh`` grows to ``abcd cdef efgh``.

Copies are exact deep copies (no noise), so right after growth the model computes the same
function as running the copied layers twice.
"""

from __future__ import annotations

import copy
import inspect
from typing import Literal

import torch
from torch import nn

from induction.errors import InputError
from induction.layers import DEPTH_KEYS, decoder_layers, set_layers
from lineage.log import DuplicationLog, GrowthEvent


def _check_block(block: int) -> None:
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise InputError(f"block must be an integer >= 1 (layers per copied block), got {block}")


def midas_span(depth: int, block: int = 4) -> tuple[tuple[int, int], int]:
    """(source span, insertion index) of MIDAS: the middle block of ``block`` layers."""
    _check_block(block)
    if depth % block:
        raise InputError(f"MIDAS needs a depth divisible by the block size {block}, got {depth}")
    k = depth // block
    start = ((k - 1) // 2) * block
    return (start, start + block), start + block


def lidas_span(depth: int, block: int = 4) -> tuple[tuple[int, int], int]:
    """(source span, insertion index) of LIDAS: ``block`` layers centred on the midpoint."""
    _check_block(block)
    if block % 2 or block > depth:
        raise InputError(
            f"LIDAS needs an even block no larger than the depth; got block {block}, depth {depth}"
        )
    mid = depth // 2
    return (mid - block // 2, mid + block // 2), mid


PRESETS = {"midas": midas_span, "lidas": lidas_span}


def duplicate_layers(
    model: nn.Module,
    source: tuple[int, int],
    insert_at: int,
    *,
    log: DuplicationLog | None = None,
    step: int = 0,
    operator: str = "copy",
    optimizer: torch.optim.Optimizer | None = None,
    optimizer_state: Literal["reset", "copy"] = "reset",
) -> tuple[GrowthEvent, torch.optim.Optimizer | None]:
    """Deep-copy layers ``source[0]:source[1]`` and insert the copies at ``insert_at``, in place.

    Keeps the config consistent (depth, per-layer ``layer_idx``, per-layer attention types) and
    points every layer at the model's config. When ``optimizer`` is given, returns a new
    optimizer of the same class over the grown model: original parameters keep their state;
    copies start fresh (``optimizer_state="reset"``, the default, as is common for MIDAS) or
    take a copy of their source parameter's state (``"copy"``).
    """
    layers = decoder_layers(model)
    depth = len(layers)
    a, b = source
    if not (0 <= a < b <= depth):
        raise InputError(f"source span [{a}, {b}) is outside layers 0..{depth - 1}")
    if not 0 <= insert_at <= depth:
        raise InputError(f"insert_at {insert_at} is outside 0..{depth}")
    copies = [copy.deepcopy(layers[i]) for i in range(a, b)]
    new_layers = list(layers[:insert_at]) + copies + list(layers[insert_at:])
    set_layers(model, new_layers)
    _fix_config(model, depth, source, insert_at)

    log = log if log is not None else DuplicationLog(initial_depth=depth)
    event = log.record_copy(step, operator, (a, b), insert_at)
    if optimizer is not None:
        optimizer = _grown_optimizer(
            optimizer,
            model,
            layers_src=[layers[i] for i in range(a, b)],
            copies=copies,
            copy_state=optimizer_state == "copy",
        )
    return event, optimizer


def grow(
    model: nn.Module,
    preset: Literal["midas", "lidas"] = "lidas",
    block: int = 4,
    **kwargs,
) -> tuple[GrowthEvent, torch.optim.Optimizer | None]:
    """Apply a MIDAS or LIDAS growth step (see module docstring)."""
    if preset not in PRESETS:
        raise InputError(f"unknown growth preset {preset!r}; use one of {', '.join(PRESETS)}")
    source, insert_at = PRESETS[preset](len(decoder_layers(model)), block)
    return duplicate_layers(model, source, insert_at, operator=preset, **kwargs)


def _fix_config(
    model: nn.Module, depth_before: int, source: tuple[int, int], insert_at: int
) -> None:
    config = model.config
    depth = len(decoder_layers(model))
    for key in DEPTH_KEYS:
        if hasattr(config, key) and isinstance(getattr(config, key), int):
            setattr(config, key, depth)
    # Per-layer attention types (Gemma/Qwen sliding windows): the copies take their source's.
    types = getattr(config, "layer_types", None)
    if isinstance(types, list) and len(types) == depth_before:
        config.layer_types = types[:insert_at] + types[source[0] : source[1]] + types[insert_at:]
    for i, layer in enumerate(decoder_layers(model)):
        for module in layer.modules():
            if hasattr(module, "layer_idx"):
                module.layer_idx = i
            # Deep copies carry their own config object; a later switch of the attention
            # implementation on model.config would then miss them.
            if hasattr(module, "config") and isinstance(module.config, type(config)):
                module.config = config


def _grown_optimizer(
    old: torch.optim.Optimizer, model: nn.Module, layers_src, copies, copy_state: bool
):
    source_of = {}
    for src, dup in zip(layers_src, copies):
        for p_src, p_dup in zip(src.parameters(), dup.parameters()):
            source_of[p_dup] = p_src
    accepted = inspect.signature(type(old).__init__).parameters
    hyper = {k: v for k, v in old.param_groups[0].items() if k in accepted and k != "params"}
    new = type(old)([p for p in model.parameters() if p.requires_grad], **hyper)
    for p in new.param_groups[0]["params"]:
        if p in old.state:
            new.state[p] = old.state[p]
        elif copy_state and source_of.get(p) in old.state:
            new.state[p] = {
                k: v.clone() if torch.is_tensor(v) else v
                for k, v in old.state[source_of[p]].items()
            }
    return new
