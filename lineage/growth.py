"""Depth-growth operators on Hugging Face decoders: duplicate a span of layers in place.

``duplicate_layers`` is the general operator (any contiguous half-open span, any insertion
index); ``midas_span`` and ``lidas_span`` are the presets of docs/research.md ("Depth growth"):

- MIDAS (Saunshi et al. 2024) copies the middle block of ``b`` layers, counted in blocks of
  ``b`` from the bottom, and inserts the copy right after it;
- LIDAS (Kapl et al. 2025) copies the ``b`` layers centred on the network's midpoint and inserts
  the copy at the midpoint, so ``abcd|efgh`` grows to ``abcd cdef efgh``;
- ``top`` copies the top ``b`` layers and stacks the copy on top (round 4's arm that copies
  the layer holding the formed induction heads, docs/zoo.md).

Copies are exact deep copies (no noise), so right after growth the model computes the same
function as running the copied layers twice.

``llama_pro`` is LLaMA-Pro block expansion (Wu et al. 2024, docs/research.md "Circuits and
per-head causality"): the layers are split into groups of ``every``, and after the last layer
of each group a copy of it is inserted whose output projections (attention ``o_proj`` and MLP
``down_proj``, or their equivalents, :data:`OUTPUT_PROJECTIONS`) are zero. A zero output
projection makes the copy an identity on the residual stream, so the grown model computes the
original function exactly; the copies still attend like their sources but write nothing
until trained.
"""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any, Literal, overload

import torch
from torch import nn

from induction.errors import InputError
from induction.models.layers import DEPTH_KEYS, decoder_layers, set_layers
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


def top_span(depth: int, block: int = 1) -> tuple[tuple[int, int], int]:
    """(source span, insertion index) that copies the top ``block`` layers and stacks the copy
    on top: staged from 4 layers with ``block`` 1, the top initial layer (where the zoo's
    induction heads form, docs/zoo.md "Round 4") ends with 5 copies (``abcd -> abcdddd``)."""
    _check_block(block)
    if block > depth:
        raise InputError(f"cannot copy the top {block} layers of a {depth}-layer model")
    return (depth - block, depth), depth


PRESETS = {"midas": midas_span, "lidas": lidas_span, "top": top_span}
#: Presets that are not a single span copy (``induction grow --preset llama-pro --every K``).
OTHER_PRESETS = ("llama-pro",)

#: Names (inside a decoder layer) of the modules that write to the residual stream: the
#: attention output projection and the MLP output projection, by architecture. Llama / Qwen /
#: Mistral / Gemma: ``self_attn.o_proj``, ``mlp.down_proj``; GPT-2: ``attn.c_proj``,
#: ``mlp.c_proj``; GPT-NeoX / Falcon: ``attention.dense`` / ``self_attention.dense``,
#: ``mlp.dense_4h_to_h``; OPT: ``self_attn.out_proj``, ``fc2``; Phi: ``self_attn.dense``,
#: ``mlp.fc2``.
OUTPUT_PROJECTIONS = {
    "attention": re.compile(
        r"^(?:self_attn\.(?:o_proj|out_proj|dense)|attn\.(?:c_proj|o_proj|out_proj)"
        r"|attention\.dense|self_attention\.dense)\.(?:weight|bias)$"
    ),
    "mlp": re.compile(
        r"^(?:mlp\.(?:down_proj|c_proj|dense_4h_to_h|fc2)|fc2|feed_forward\.w2)\.(?:weight|bias)$"
    ),
}


def output_projection_names(names: list[str], where: str = "the layer") -> list[str]:
    """The tensor names (relative to a decoder layer) to zero for a LLaMA-Pro copy: its
    attention and MLP output projections. Refuses (one line) when either is not recognised,
    or when the layer has other modules that could write (mixture-of-experts, cross-attention),
    rather than guess."""
    found = {kind: [n for n in names if rx.match(n)] for kind, rx in OUTPUT_PROJECTIONS.items()}
    missing = [kind for kind, hits in found.items() if not any(h.endswith("weight") for h in hits)]
    odd = [n for n in names if re.search(r"(?:experts|cross_attn|encoder_attn)", n)]
    if missing or odd:
        why = (
            f"no recognised {' or '.join(missing)} output projection"
            if missing
            else f"unsupported modules ({odd[0]}, ...)"
        )
        raise InputError(
            f"llama-pro cannot tell which tensors of {where} write to the residual stream "
            f"({why}; knows o_proj/down_proj, out_proj/fc2, c_proj, dense/dense_4h_to_h); "
            "refusing to guess"
        )
    return found["attention"] + found["mlp"]


def llama_pro_order(depth: int, every: int) -> tuple[list[int], list[int]]:
    """``(order, zeroed)``: source layer of each grown layer, and the grown indices of the
    zero-output copies. ``every`` must divide ``depth`` (Wu et al. split the layers into
    ``depth / every`` groups and expand each group's last layer)."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise InputError(f"--every must be a positive integer, got {every!r}")
    if depth % every:
        divisors = [k for k in range(1, depth + 1) if depth % k == 0]
        raise InputError(
            f"llama-pro needs --every to divide the depth {depth}, got {every}; use one of "
            f"{', '.join(map(str, divisors))}"
        )
    order, zeroed = [], []
    for i in range(depth):
        order.append(i)
        if (i + 1) % every == 0:
            zeroed.append(len(order))
            order.append(i)
    return order, zeroed


def llama_pro_layer_map(order: list[int]) -> list[list[tuple[int, float]]]:
    return [[(p, 1.0)] for p in order]


def llama_pro(
    model: nn.Module,
    every: int,
    *,
    log: DuplicationLog | None = None,
    step: int = 0,
) -> GrowthEvent:
    """LLaMA-Pro block expansion in place: after every ``every``-th layer insert a deep copy
    of it with zeroed output projections (see the module docstring). Returns the logged event
    (operator ``llama-pro``, the copies listed under ``zeroed``)."""
    layers = decoder_layers(model)
    depth = len(layers)
    order, zeroed = llama_pro_order(depth, every)
    new_layers, seen = [], set()
    for j, i in enumerate(order):
        if i not in seen:
            seen.add(i)
            new_layers.append(layers[i])
            continue
        dup = copy.deepcopy(layers[i])
        params = dict(dup.named_parameters())
        with torch.no_grad():
            for name in output_projection_names(list(params), where=f"layer {i}"):
                params[name].zero_()
        new_layers.append(dup)
    set_layers(model, new_layers)
    _fix_config_order(model, depth, order)
    log = log if log is not None else DuplicationLog(initial_depth=depth)
    return log.record_mix(
        step,
        llama_pro_layer_map(order),
        operator="llama-pro",
        note=f"llama-pro every {every}: zero-output copies at {zeroed}",
        zeroed=zeroed,
    )


@overload
def duplicate_layers(
    model: nn.Module,
    source: tuple[int, int],
    insert_at: int,
    *,
    log: DuplicationLog | None = None,
    step: int = 0,
    operator: str = "copy",
    optimizer: torch.optim.Optimizer,
    optimizer_state: Literal["reset", "copy"] = "reset",
) -> tuple[GrowthEvent, torch.optim.Optimizer]: ...
@overload
def duplicate_layers(
    model: nn.Module,
    source: tuple[int, int],
    insert_at: int,
    *,
    log: DuplicationLog | None = None,
    step: int = 0,
    operator: str = "copy",
    optimizer: None = None,
    optimizer_state: Literal["reset", "copy"] = "reset",
) -> tuple[GrowthEvent, None]: ...
@overload
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
) -> tuple[GrowthEvent, torch.optim.Optimizer | None]: ...
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
    preset: Literal["midas", "lidas", "llama-pro"] = "lidas",
    block: int = 4,
    *,
    every: int | None = None,
    **kwargs,
) -> tuple[GrowthEvent, torch.optim.Optimizer | None]:
    """Apply a MIDAS or LIDAS growth step, or LLaMA-Pro expansion with ``every`` (see the
    module docstring). LLaMA-Pro takes only ``log`` and ``step`` and returns no optimizer."""
    if preset == "llama-pro":
        if every is None:
            raise InputError("the llama-pro preset needs --every K (a copy after every K layers)")
        extra = set(kwargs) - {"log", "step"}
        if extra:
            raise InputError(f"llama-pro growth does not take {', '.join(sorted(extra))}")
        return llama_pro(model, every, **kwargs), None
    if preset not in PRESETS:
        raise InputError(
            f"unknown growth preset {preset!r}; use one of {', '.join([*PRESETS, *OTHER_PRESETS])}"
        )
    source, insert_at = PRESETS[preset](len(decoder_layers(model)), block)
    return duplicate_layers(model, source, insert_at, operator=preset, **kwargs)


def _fix_config(
    model: nn.Module, depth_before: int, source: tuple[int, int], insert_at: int
) -> None:
    old = list(range(depth_before))
    _fix_config_order(
        model, depth_before, old[:insert_at] + old[source[0] : source[1]] + old[insert_at:]
    )


def _fix_config_order(model: nn.Module, depth_before: int, order: list[int]) -> None:
    """Config and per-layer state after restacking: ``order[j]`` is grown layer j's source."""
    config: Any = model.config  # transformers' config (nn.Module types it Tensor | Module)
    depth = len(decoder_layers(model))
    for key in DEPTH_KEYS:
        if hasattr(config, key) and isinstance(getattr(config, key), int):
            setattr(config, key, depth)
    # Per-layer attention types (Gemma/Qwen sliding windows): the copies take their source's.
    types = getattr(config, "layer_types", None)
    if isinstance(types, list) and len(types) == depth_before:
        config.layer_types = [types[i] for i in order]
    for i, layer in enumerate(decoder_layers(model)):
        for module in layer.modules():
            if hasattr(module, "layer_idx"):
                setattr(module, "layer_idx", i)  # noqa: B010 (nn.Module's __setattr__ types)
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
